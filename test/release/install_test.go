package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Both ways of installing give a tether whose local backend finds its shim,
// and whose `tether pool serve` finds tether-pool, with nothing else on
// PATH: `make install` (tether, tether-pool, tether-shim and GitLab's
// tether-stage), and `go install ./cmd/...` (the CLI as tether, from
// cmd/tether, and the shim as tether-shim too, from cmd/tether-shim;
// tether-pool and tether-stage from their cmd/ directories).
func TestInstallFindsShim(t *testing.T) {
	script := filepath.Join(t.TempDir(), "job.sh")
	if err := os.WriteFile(script, []byte("echo installed-ok\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cmd  []string
		cli  string
		want []string
	}{
		{"make install", []string{"make", "install"}, "tether", []string{"tether", "tether-pool", "tether-shim", "tether-stage"}},
		{"go install ./cmd/...", []string{"go", "install", "-trimpath", "./cmd/..."}, "tether", []string{"shim", "tether", "tether-pool", "tether-shim", "tether-stage"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gobin := t.TempDir()
			cmd := exec.Command(tc.cmd[0], tc.cmd[1:]...)
			cmd.Dir = repoRoot
			cmd.Env = append(os.Environ(), "GOBIN="+gobin, "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", tc.name, err, out)
			}
			entries, err := os.ReadDir(gobin)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range entries {
				got = append(got, e.Name())
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("%s installed %v, want %v", tc.name, got, tc.want)
			}
			run := exec.Command(filepath.Join(gobin, tc.cli), "run", "--local", "-q", script)
			// Only the system's directories: the shim must be found next to
			// the CLI, not on a developer's PATH.
			run.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + t.TempDir()}
			out, err := run.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "installed-ok") {
				t.Fatalf("%s run --local after %s: %v\n%s", tc.cli, tc.name, err, out)
			}
			serve := exec.Command(filepath.Join(gobin, tc.cli), "pool", "serve", "--help")
			serve.Env = run.Env
			out, err = serve.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "--metrics-address") {
				t.Fatalf("%s pool serve --help after %s: %v\n%s", tc.cli, tc.name, err, out)
			}
		})
	}
}
