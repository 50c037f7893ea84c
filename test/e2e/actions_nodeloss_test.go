//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/internal/testing/actionsrunner"
)

// TestActionsDisruptionNodeLoss: the node's kubelet and containerd stop for
// good while an Actions step runs: the step fails as soon as the node is
// NotReady, saying so; once the node is back and the job cleaned up,
// nothing of it is left.
func TestActionsDisruptionNodeLoss(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "act-nodeloss")
	r := newActionsRunner(t, c, ns)
	if res, err := r.PrepareJob(ctx, BashImage, nil, nil); err != nil || res.ExitCode != 0 {
		t.Fatalf("prepare_job: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
	}
	type stepResult struct {
		res   actionsrunner.Result
		err   error
		ended time.Time
	}
	step := make(chan stepResult, 1)
	go func() {
		res, err := r.RunScript(ctx, actionsrunner.Step{Script: "echo started; sleep 600; echo never"})
		step <- stepResult{res, err, time.Now()}
	}()
	time.Sleep(3 * time.Second) // the step attached and its script runs
	stopped := time.Now()
	restore := stopNodeAgents(t, c)
	var s stepResult
	select {
	case s = <-step:
	case <-time.After(nodeMonitorGracePeriod + 90*time.Second):
		t.Fatal("the step did not end after its node was lost")
	}
	t.Logf("step: exit %d, err %v\nstdout %q\nstderr %s\nlog %s", s.res.ExitCode, s.err, s.res.Stdout, s.res.Stderr, strings.Join(s.res.Log, "\n"))
	checkNodeLossFailure(t, stopped, s.ended, string(s.res.Stdout)+string(s.res.Stderr)+strings.Join(s.res.Log, "\n"))
	if s.res.ExitCode == 0 {
		t.Error("the step succeeded; want it to fail")
	}
	if strings.Contains(string(s.res.Stdout), "never") {
		t.Errorf("stdout %q: the step went on", s.res.Stdout)
	}
	restore()
	cleanupLeavesNothing(ctx, t, c, ns, r)
	waitNoJobLeft(ctx, t, c, ns, 2*time.Minute)
}
