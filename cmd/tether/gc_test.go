package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether-ci/tether/internal/gc"
	"github.com/tether-ci/tether/internal/gccmd"
	"github.com/tether-ci/tether/internal/testing/kubeconfigtest"
)

func TestGCCommandUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"stray"}, {"--bogus"}, {"-A", "-n", "x"}, {"-n", "x", "-l", "a in (b"}} {
		var out, errb bytes.Buffer
		dir := t.TempDir()
		kubeconfigtest.Write(t, filepath.Join(dir, "config"), "ctx", "ns")
		args = append(args, "--kubeconfig", filepath.Join(dir, "config"))
		if code := gcCmd(context.Background(), args, &out, &errb); code != exitUsage {
			t.Errorf("%v: exit %d, want %d; stderr %s", args, code, exitUsage, errb.String())
		}
		if !strings.Contains(errb.String(), "tether gc:") {
			t.Errorf("%v: stderr %q", args, errb.String())
		}
	}
	var out bytes.Buffer
	if code := gcCmd(context.Background(), []string{"--help"}, &out, &out); code != 0 || !strings.Contains(out.String(), gc.TTLAnnotation) {
		t.Errorf("--help: exit %d\n%s", code, out.String())
	}
}

// An unreachable apiserver is a failure (exit 1), not a silent success.
func TestGCCommandUnreachableCluster(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	kubeconfigtest.Write(t, path, "ctx", "ns") // server 127.0.0.1:1: connection refused
	var out, errb bytes.Buffer
	if code := gcCmd(context.Background(), []string{"--kubeconfig", path}, &out, &errb); code != gccmd.ExitFailed {
		t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, gccmd.ExitFailed, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "failed pod in namespace ns: list pods") || !strings.Contains(out.String(), "connection refused") {
		t.Errorf("stdout:\n%s", out.String())
	}
}
