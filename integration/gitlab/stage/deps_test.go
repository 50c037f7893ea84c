package stage

import (
	"os/exec"
	"strings"
	"testing"
)

// tether-stage starts as fast as a Go program can because this package,
// and the command over it, use the standard library alone: no Kubernetes
// client, no package of the project's own but this one, internal/sibling
// (finding tether beside it) and, for the command, the build's version,
// both themselves the standard library's alone. Nor the standard
// library's net (its poller, its threads) or encoding/json (reflection
// over pages of type data): every page a stage process touches is a page
// fault, each a notable cost on virtual machines.
func TestStageUsesTheStandardLibraryAlone(t *testing.T) {
	for _, pkg := range []string{".", "../../../cmd/tether-stage"} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			switch dep {
			case "github.com/tether-ci/tether/integration/gitlab/stage", "github.com/tether-ci/tether/cmd/tether-stage", "github.com/tether-ci/tether/internal/version", "github.com/tether-ci/tether/internal/sibling":
			default:
				t.Errorf("%s depends on %s: the stage process must use the standard library alone", pkg, dep)
			}
		}
		out, err = exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			switch dep {
			case "net", "encoding/json", "os/user":
				t.Errorf("%s depends on %s: the stage process's path must stay small", pkg, dep)
			}
		}
	}
}
