// Package deps lets a package's tests check which of the project's own
// packages it depends on (through `go list -deps`), so the layering
// documented in docs/ARCHITECTURE.md (client → settings → integration →
// commands) is kept by tests, not by review. Test-only.
package deps

import (
	"os/exec"
	"strings"
	"testing"
)

// Module is the project's module path with its trailing slash.
const Module = "github.com/tether-ci/tether/"

// Project returns the project's packages, as paths below Module, that the
// packages pkgs (go list patterns, relative to the test's directory)
// depend on, themselves included.
func Project(t testing.TB, pkgs ...string) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	got := map[string]bool{}
	for _, pkg := range strings.Fields(string(out)) {
		if rest, ok := strings.CutPrefix(pkg, Module); ok {
			got[rest] = true
		}
	}
	return got
}

// Forbid fails t for every project package the package in the test's
// directory (self, its path below Module) depends on that is one of
// forbidden or below one of them, its own sub-packages excepted; rule
// says what the package may use, for the failure message.
func Forbid(t testing.TB, self, rule string, forbidden ...string) {
	t.Helper()
	got := Project(t, ".")
	if !got[self] {
		t.Fatalf("go list did not list %s itself (listed: %v)", self, got)
	}
	for pkg := range got {
		if pkg == self || strings.HasPrefix(pkg, self+"/") {
			continue // its own sub-packages (internal ones) are its own
		}
		for _, f := range forbidden {
			if pkg == f || strings.HasPrefix(pkg, f+"/") {
				t.Errorf("%s depends on %s: %s", self, pkg, rule)
			}
		}
	}
}

// Only fails t for every project package the package in the test's
// directory (self, its path below Module) depends on that is neither
// self, nor below it, nor one of allowed (paths below Module) or a
// package one of them depends on; rule says what the package may use,
// for the failure message. With no allowed, the package may use none of
// the project's packages.
func Only(t testing.TB, self, rule string, allowed ...string) {
	t.Helper()
	ok := map[string]bool{}
	if len(allowed) > 0 {
		full := make([]string, len(allowed))
		for i, a := range allowed {
			full[i] = Module + a
		}
		ok = Project(t, full...)
	}
	got := Project(t, ".")
	if !got[self] {
		t.Fatalf("go list did not list %s itself (listed: %v)", self, got)
	}
	for pkg := range got {
		if pkg != self && !strings.HasPrefix(pkg, self+"/") && !ok[pkg] {
			t.Errorf("%s depends on %s: %s", self, pkg, rule)
		}
	}
}
