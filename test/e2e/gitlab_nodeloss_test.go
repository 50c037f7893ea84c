//go:build e2e

package e2e

import (
	"testing"
	"time"
)

// TestGitLabDisruptionNodeLoss: the node's kubelet and containerd stop for
// good while a GitLab job's stage runs: the stage fails as a system failure
// (runner_system_failure) as soon as the node is NotReady, its job log
// ending with the node's condition; once the node is back and the job
// cleaned up, nothing of it is left.
func TestGitLabDisruptionNodeLoss(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gl-nodeloss")
	r := newRunnerStandInJob(t, c, ns, standInJob{})
	r.prepare(ctx)
	waitJobPodRunning(ctx, t, c, ns)
	stage := runStageAsync(ctx, r, "build_script", "echo started; sleep 600; echo never")
	time.Sleep(3 * time.Second) // the stage attached and its script runs
	stopped := time.Now()
	restore := stopNodeAgents(t, c)
	var res stageResult
	select {
	case res = <-stage:
	case <-time.After(nodeMonitorGracePeriod + 90*time.Second):
		t.Fatal("the stage did not end after its node was lost")
	}
	t.Logf("build_script: exit %d\n%s", res.code, res.out)
	checkNodeLossFailure(t, stopped, res.ended, res.out)
	if res.code != standInSystemFailure {
		t.Errorf("build_script exit %d; want the system failure (%d)", res.code, standInSystemFailure)
	}
	restore()
	r.cleanup(ctx)
	waitNoJobLeft(ctx, t, c, ns, 2*time.Minute)
}
