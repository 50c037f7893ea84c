package gitlab

import (
	"os/exec"
	"strings"
	"testing"
)

// The driver sits between the settings layer and the commands: of the
// project's packages it never uses a command, another integration or
// the shim.
func TestGitLabIntegrationDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const self = "github.com/tether-ci/tether/integration/gitlab"
	seen := false
	for _, pkg := range strings.Fields(string(out)) {
		rest, ok := strings.CutPrefix(pkg, "github.com/tether-ci/tether/")
		if !ok || pkg == self {
			seen = seen || pkg == self
			continue
		}
		if strings.HasPrefix(rest, "cmd/") || strings.HasPrefix(rest, "integration/") || rest == "internal/shim" || strings.HasPrefix(rest, "internal/shim/") {
			t.Errorf("integration/gitlab depends on %s: it may use the client, settings, the protocol and internal helpers, never a command, another integration or the shim", pkg)
		}
	}
	if !seen {
		t.Fatalf("go list did not list %s itself:\n%s", self, out)
	}
}
