package main

import (
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/cmdutil"
	"github.com/tether-ci/tether/settings"
)

// tether run takes the same flag: on the pod, and refused with --local.
func TestRunTerminationGracePeriodFlag(t *testing.T) {
	f := settings.Pod{}
	fs := cmdutil.NewFlagSet("t")
	f.AddFlags(fs)
	if _, err := cmdutil.ParseArgs(fs, []string{"--termination-grace-period", "9"}); err != nil {
		t.Fatal(err)
	}
	var spec kube.Spec
	if err := f.ApplyTo(&spec); err != nil {
		t.Fatal(err)
	}
	if spec.TerminationGracePeriod != 9*time.Second || !f.IsSet() {
		t.Errorf("grace %s, any %v; want 9s, true", spec.TerminationGracePeriod, f.IsSet())
	}
	dir := t.TempDir()
	writeScript(t, dir, "job.sh", "echo hi\n")
	_, stderr, code := tether(t, dir, "run", "--local", "--termination-grace-period", "5", "job.sh")
	if code != exitUsage || !strings.Contains(string(stderr), "apply to Kubernetes pods only") {
		t.Errorf("--local with a grace: exit %d stderr %s", code, stderr)
	}
	_, stderr, code = tether(t, dir, "run", "--image", "busybox", "--termination-grace-period", "0", "job.sh")
	if code != exitUsage || !strings.Contains(string(stderr), "--termination-grace-period") {
		t.Errorf("grace 0: exit %d stderr %s", code, stderr)
	}
}
