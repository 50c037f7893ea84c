package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether-ci/tether/internal/version"
)

// `tether-stage --version` answers itself: no agent, no `tether` beside
// it or on PATH, no runner environment.
func TestVersionNeedsNothingElse(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "tether-stage")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--version")
	cmd.Env = []string{"PATH=/nonexistent"}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || string(out) != "tether-stage "+version.Get()+"\n" || stderr.Len() != 0 {
		t.Fatalf("--version: %v, stdout %q, stderr %q", err, out, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(bin), "tether")); err == nil {
		t.Fatal("a tether beside the test's tether-stage")
	}
}
