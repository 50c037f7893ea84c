package kube_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/tether-ci/tether/internal/testing/testbin"
	"k8s.io/klog/v2"
)

// shimPath is the tether-shim binary TestMain builds.
var shimPath string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	// client-go's klog reports every dropped stream as an "Unhandled Error";
	// the tests cut streams on purpose and check the outcome instead.
	klog.SetSlogLogger(slog.New(slog.DiscardHandler))
	return testbin.Main(m, map[string]string{"tether-shim": testbin.Shim}, func(dir string) {
		shimPath = filepath.Join(dir, "tether-shim")
	})
}
