package ociimage_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether-ci/tether/internal/ociimage"
)

// A static binary passes for its own architecture only; a dynamically
// linked one (this machine's /bin/sh) and a non-ELF file fail.
func TestCheckStaticELF(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{"amd64", "arm64"} {
		out := filepath.Join(dir, "prog-"+arch)
		cmd := exec.Command("go", "build", "-o", out, src)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", arch, err, b)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if err := ociimage.CheckStaticELF(b, arch); err != nil {
			t.Errorf("%s: %v", arch, err)
		}
		other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[arch]
		if err := ociimage.CheckStaticELF(b, other); err == nil || !strings.Contains(err.Error(), "machine") {
			t.Errorf("%s binary passed as %s: %v", arch, other, err)
		}
	}
	sh, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := ociimage.CheckStaticELF(sh, "amd64"); err == nil {
		t.Error("/bin/sh (dynamically linked) passed as static")
	}
	if err := ociimage.CheckStaticELF([]byte("#!/bin/sh\n"), "amd64"); err == nil {
		t.Error("a script passed as ELF")
	}
}
