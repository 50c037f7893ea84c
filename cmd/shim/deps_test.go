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

// Standard packages the shim must not link, for their size: every byte
// of the binary the runtime touches stays in an idle shim's RSS.
//   - crypto/...: even crypto/sha256 alone links Go's FIPS 140 module
//     (AES, GCM, a DRBG, SHA-3, SHA-512, HMAC and their self-tests): about
//     144 KiB of binary and 0.2 MiB of idle RSS. internal/sha256sum checks
//     delivered files instead.
//   - net/...: net/url brings net/netip and unique, about 60 KB of binary
//     and of idle RSS for two escape functions the shim has its own of.
func TestShimLinksNoHeavyPackages(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".", "../tether-shim").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		switch {
		case pkg == "crypto" || strings.HasPrefix(pkg, "crypto/") || strings.Contains(pkg, "golang.org/x/crypto"):
			t.Errorf("tether-shim links %s: the shim must link no crypto package (use internal/sha256sum for checksums)", pkg)
		case pkg == "net" || strings.HasPrefix(pkg, "net/") || pkg == "unique":
			t.Errorf("tether-shim links %s: the shim must link neither net/url nor what it brings (it has its own URL escaping)", pkg)
		}
	}
}
