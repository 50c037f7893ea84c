//go:build e2e

package e2e

import (
	"strings"
	"testing"
)

// TestGitLabDriverImageWithoutBash: a job whose image has no bash (busybox,
// as alpine) runs its stages with sh, as on GitLab's Kubernetes executor,
// when the driver config names no shell; naming one the image lacks is a
// build failure whose job log says which shell is missing.
func TestGitLabDriverImageWithoutBash(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-sh")
	r := newRunnerStandInJob(t, c, ns, standInJob{Image: BusyboxImage})
	r.prepare(ctx)

	out, code, _ := r.run(ctx, "step_script", `echo "sh-ok $((1 + 2)) $(readlink /bin/sh)"`+"\n", nil)
	if code != 0 || !strings.Contains(out, "sh-ok 3 /bin/busybox") {
		t.Fatalf("step_script in busybox: exit %d\n%s", code, out)
	}

	cmd := r.command(ctx, "run", "--shell", "/bin/bash", r.stageScript("after_script", "echo never\n", nil), "after_script")
	stdout, err := cmd.Output()
	if err == nil || cmd.ProcessState.ExitCode() != standInBuildFailure ||
		!strings.Contains(string(stdout), "ERROR: tether: stage after_script:") || !strings.Contains(string(stdout), "/bin/bash") || strings.Contains(string(stdout), "never") {
		t.Errorf("--shell /bin/bash in busybox: %v, exit %d, stdout:\n%s", err, cmd.ProcessState.ExitCode(), stdout)
	}
}
