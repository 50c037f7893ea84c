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

// No crypto package in the shim: crypto/... (even crypto/sha256 alone)
// links Go's FIPS 140 module — AES, GCM, a DRBG, SHA-3, SHA-512, HMAC and
// its self-tests — which added about 135 KB to the binary and about
// 0.15–0.2 MiB to the resident memory of every idle shim. The shim checks
// delivered files with internal/sha256sum instead.
func TestShimLinksNoCrypto(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".", "../tether-shim").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "crypto" || strings.HasPrefix(pkg, "crypto/") || strings.Contains(pkg, "golang.org/x/crypto") {
			t.Errorf("tether-shim links %s: the shim must link no crypto package (use internal/sha256sum for checksums)", pkg)
		}
	}
}
