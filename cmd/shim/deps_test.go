package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The shim stays a small static binary any image can carry: standard
// library, creack/pty and the project's own protocol package only.
func TestShimDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		switch {
		case strings.HasPrefix(pkg, "github.com/tether-ci/tether/"),
			strings.HasPrefix(pkg, "github.com/creack/pty"),
			strings.HasPrefix(pkg, "golang.org/x/sys/"): // creack/pty's own dependency, if any
		default:
			t.Errorf("tether-shim depends on %s; it must use only the standard library, creack/pty and protocol", pkg)
		}
		if strings.Contains(pkg, "k8s.io") || strings.Contains(pkg, "/client/") {
			t.Errorf("tether-shim imports %s (never client-go or the client)", pkg)
		}
	}
}
