package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tether-ci/tether/internal/testing/testbin"
)

// binDir holds tether, tether-pool and tether-shim side by side, built from source once
// for this package's tests (not depending on `make build`), and
// tether-shim-static: a static shim for containers (tether-shim is built
// with the race detector when the tests run with it).
var binDir string

func TestMain(m *testing.M) {
	os.Exit(testbin.Main(m, map[string]string{"tether": testbin.Client, "tether-pool": testbin.Pool, "tether-shim": testbin.Shim}, func(dir string) {
		binDir = dir
		if _, err := testbin.BuildStatic(context.Background(), dir, "tether-shim-static", testbin.Shim); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}))
}

// tether runs the built tether binary and returns stdout, stderr and the
// exit code.
func tether(t *testing.T, dir string, args ...string) (stdout, stderr []byte, code int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "tether"), args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("run tether: %v", err)
	}
	return out.Bytes(), errb.Bytes(), code
}

// writeScript writes an executable script into dir.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}
