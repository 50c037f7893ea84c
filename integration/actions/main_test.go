package actions

import (
	"os"
	"testing"

	"github.com/tether-ci/tether/internal/testing/testbin"
)

// binDir holds tether-shim, built from source once for this package's
// tests (with the race detector when the tests run with it), for the
// tests that run a container step's shim as a real process.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(testbin.Main(m, map[string]string{"tether-shim": testbin.Shim}, func(dir string) { binDir = dir }))
}
