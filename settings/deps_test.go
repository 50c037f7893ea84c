package settings

import (
	"os/exec"
	"strings"
	"testing"
)

// projectDeps lists the project's packages that pkgs depend on.
func projectDeps(t *testing.T, pkgs ...string) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := map[string]bool{}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/tether-ci/tether/") {
			deps[pkg] = true
		}
	}
	return deps
}

// The settings layer sits below every integration: of the project's own
// packages it uses client/kube (and what that uses) alone, never a
// command, an integration (internal/gitlab, …) or the shim.
func TestSettingsDependencies(t *testing.T) {
	allowed := projectDeps(t, "../client/kube")
	for pkg := range projectDeps(t, ".") {
		if pkg != "github.com/tether-ci/tether/settings" && !allowed[pkg] {
			t.Errorf("settings depends on %s; it may use client/kube and its dependencies only (integrations import settings, never the reverse)", pkg)
		}
	}
}
