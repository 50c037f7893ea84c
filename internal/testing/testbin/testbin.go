// Package testbin builds the project's programs for tests that run them as
// real processes, from the working tree (the tests do not depend on `make
// build`), the way `make build` does: static, CGO_ENABLED=0, -trimpath —
// except under the race detector (`go test -race`), where they are built
// with it as well, so the processes a test runs are checked too (a race
// makes such a program exit with status 66).
package testbin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Main packages of the project's programs.
const (
	// Shim is tether-shim's main package.
	Shim = "github.com/tether-ci/tether/cmd/shim"
	// Client is the tether CLI's main package.
	Client = "github.com/tether-ci/tether/cmd/tether"
	// Pool is tether-pool's main package (`tether pool serve` and
	// `tether pool status` run it from beside tether).
	Pool = "github.com/tether-ci/tether/cmd/tether-pool"
)

// Build builds the main package pkg to dir/name and returns the binary's
// path: with the race detector when the test runs with it, else static.
func Build(ctx context.Context, dir, name, pkg string) (string, error) {
	return build(ctx, dir, name, pkg, raceBuild)
}

// BuildStatic builds the main package pkg to dir/name as a static binary
// (for a container that has no C library), and returns its path.
func BuildStatic(ctx context.Context, dir, name, pkg string) (string, error) {
	return build(ctx, dir, name, pkg, false)
}

func build(ctx context.Context, dir, name, pkg string, race bool) (string, error) {
	out := filepath.Join(dir, name)
	args, env := []string{"build", "-trimpath", "-o", out}, "CGO_ENABLED=0"
	if race {
		args, env = append(args, "-race"), "CGO_ENABLED=1"
	}
	cmd := exec.CommandContext(ctx, "go", append(args, pkg)...)
	cmd.Env = append(os.Environ(), env)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s from %s: %w: %s", name, pkg, err, b)
	}
	return out, nil
}

// Main is a TestMain body: it builds each binary (name → main package)
// into a new temporary directory, readable by every user (tests also run
// the binaries as an unprivileged user), calls setup with the directory,
// runs the tests and removes the directory. It returns the exit code for
// os.Exit; a failed build is reported on stderr and fails the package.
func Main(m *testing.M, bins map[string]string, setup func(dir string)) int {
	dir, err := os.MkdirTemp("", "tether-testbin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testbin:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "testbin:", err)
		return 1
	}
	for name, pkg := range bins {
		if _, err := Build(context.Background(), dir, name, pkg); err != nil {
			fmt.Fprintln(os.Stderr, "testbin:", err)
			return 1
		}
	}
	if setup != nil {
		setup(dir)
	}
	return m.Run()
}
