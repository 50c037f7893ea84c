package client_test

import (
	"os"
	"testing"

	"github.com/tether-ci/tether/internal/testing/testbin"
)

// TestMain builds tether-shim from source and puts it first on PATH, so the
// examples find it the way a program would (local.FindShim).
func TestMain(m *testing.M) {
	os.Exit(testbin.Main(m, map[string]string{"tether-shim": testbin.Shim}, func(dir string) {
		os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	}))
}
