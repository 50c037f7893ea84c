// Package testbin builds the project's programs for tests that run them as
// real processes, from the working tree (the tests do not depend on `make
// build`), the way `make build` does: static, CGO_ENABLED=0, -trimpath.
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
	Client = "github.com/tether-ci/tether/cmd/client"
)

// Build builds the main package pkg to dir/name and returns the binary's
// path.
func Build(ctx context.Context, dir, name, pkg string) (string, error) {
	out := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
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
