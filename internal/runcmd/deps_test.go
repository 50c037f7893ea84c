package runcmd

import (
	"os/exec"
	"strings"
	"testing"
)

// Commands and integrations import this package, never the reverse: of
// the project's packages it uses no command (cmd/...) and no integration
// (integration/...).
func TestDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	self := false
	for _, pkg := range strings.Fields(string(out)) {
		rest, ok := strings.CutPrefix(pkg, "github.com/tether-ci/tether/")
		if !ok {
			continue
		}
		self = self || rest == "internal/runcmd"
		if strings.HasPrefix(rest, "cmd/") || strings.HasPrefix(rest, "integration/") {
			t.Errorf("internal/runcmd depends on %s: it may use no command and no integration", pkg)
		}
	}
	if !self {
		t.Fatalf("go list did not list internal/runcmd itself:\n%s", out)
	}
}
