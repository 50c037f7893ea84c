package kube_test

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

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
	dir, err := os.MkdirTemp("", "tether-kube-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube tests:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	shimPath = filepath.Join(dir, "tether-shim")
	build := exec.Command("go", "build", "-trimpath", "-o", shimPath, "github.com/tether-ci/tether/cmd/shim")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "kube tests: building tether-shim failed:", err)
		return 1
	}
	return m.Run()
}
