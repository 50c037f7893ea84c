//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/tether-ci/tether/client/kube"
)

// stageResult is one run_exec's outcome.
type stageResult struct {
	out   string
	code  int
	ended time.Time
}

// runStageAsync runs stage with body through the stand-in in the
// background.
func runStageAsync(ctx context.Context, r *runnerStandIn, stage, body string) <-chan stageResult {
	res := make(chan stageResult, 1)
	script := r.stageScript(stage, body, nil)
	go func() {
		cmd := r.command(ctx, "run", script, stage)
		out, err := cmd.Output()
		code := 0
		if err != nil {
			code = -1
			if cmd.ProcessState != nil {
				code = cmd.ProcessState.ExitCode()
			}
		}
		res <- stageResult{string(out), code, time.Now()}
	}()
	return res
}

// waitJobPodRunning waits until the job's pod in ns runs and returns its
// name.
func waitJobPodRunning(ctx context.Context, t *testing.T, c *Cluster, ns string) string {
	t.Helper()
	var name string
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	c.WaitFor(wctx, t, "the job's pod running in "+ns, func(ctx context.Context) (bool, error) {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedByValue})
		if err != nil || len(pods.Items) != 1 {
			return false, err
		}
		name = pods.Items[0].Name
		return pods.Items[0].Status.Phase == corev1.PodRunning, nil
	})
	return name
}

// TestGitLabDisruptionDrain: a drain started while a GitLab job's stage
// runs waits for the job (its pod stays until cleanup_exec); with the
// protection off it evicts the pod and the stage fails as a system
// failure (runner_system_failure) saying so.
func TestGitLabDisruptionDrain(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	t.Run("protected", func(t *testing.T) {
		ns := c.NewNamespace(t, "gl-drain")
		mark := "tether-e2e-drain=" + rand.String(6)
		r := newRunnerStandInJob(t, c, ns, standInJob{Config: "label: [" + mark + "]\n"})
		r.prepare(ctx)
		waitJobPodRunning(ctx, t, c, ns)
		stage := runStageAsync(ctx, r, "build_script", "echo started; sleep 6; echo done")
		time.Sleep(2 * time.Second)
		drained := drainJob(ctx, t, c, mark, 120*time.Second)
		res := <-stage
		t.Logf("build_script: exit %d\n%s", res.code, res.out)
		if res.code != 0 || !strings.Contains(res.out, "started\n") || !strings.Contains(res.out, "done\n") {
			t.Fatalf("build_script exit %d; want 0 with its whole output", res.code)
		}
		select {
		case d := <-drained:
			t.Fatalf("the drain completed while the job's pod was still there:\n%s", d.out)
		case <-time.After(2 * time.Second):
		}
		r.cleanup(ctx)
		cleaned := time.Now()
		select {
		case d := <-drained:
			t.Logf("kubectl drain:\n%s", d.out)
			if d.err != nil || d.ended.Before(cleaned) {
				t.Errorf("the drain: %v, ended %s, the job cleaned up %s", d.err, d.ended, cleaned)
			}
		case <-time.After(90 * time.Second):
			t.Fatal("the drain did not complete after the job's cleanup")
		}
		waitNoJobLeft(ctx, t, c, ns, 60*time.Second)
	})
	t.Run("unprotected", func(t *testing.T) {
		ns := c.NewNamespace(t, "gl-drainoff")
		mark := "tether-e2e-drain=" + rand.String(6)
		r := newRunnerStandInJob(t, c, ns, standInJob{Config: "label: [" + mark + "]\nno-disruption-protection: true\n"})
		r.prepare(ctx)
		waitJobPodRunning(ctx, t, c, ns)
		stage := runStageAsync(ctx, r, "build_script", "echo started; sleep 120; echo never")
		time.Sleep(2 * time.Second)
		drained := drainJob(ctx, t, c, mark, 90*time.Second)
		var res stageResult
		select {
		case res = <-stage:
		case <-time.After(60 * time.Second):
			t.Fatal("the stage did not end after its pod was evicted")
		}
		t.Logf("build_script: exit %d\n%s", res.code, res.out)
		if res.code != standInSystemFailure || !strings.Contains(res.out, "evicted by the Eviction API (node drain)") {
			t.Errorf("build_script exit %d; want the system failure (%d) saying the pod was evicted by the Eviction API (node drain)", res.code, standInSystemFailure)
		}
		if d := <-drained; d.err != nil {
			t.Errorf("the drain failed: %v\n%s", d.err, d.out)
		}
		r.cleanup(ctx)
		waitNoJobLeft(ctx, t, c, ns, 90*time.Second)
	})
}
