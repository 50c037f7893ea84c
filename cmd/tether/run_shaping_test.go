package main

import (
	"strings"
	"testing"
)

// A pod-shaping flag with a backend that makes no pod is bad input.
func TestShapingFlagsNeedKubernetes(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "job.sh", "echo hi\n")
	_, stderr, code := tether(t, dir, "run", "--local", "--memory", "64Mi", "job.sh")
	if code != 2 || !strings.Contains(string(stderr), "apply to Kubernetes pods only") {
		t.Fatalf("exit %d stderr %s", code, stderr)
	}
	_, stderr, code = tether(t, dir, "run", "--image", "busybox", "--cpu", "lots", "job.sh")
	if code != 2 || !strings.Contains(string(stderr), `--cpu "lots"`) {
		t.Fatalf("exit %d stderr %s", code, stderr)
	}
}
