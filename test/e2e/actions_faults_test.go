//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/integration/actions"
	"github.com/tether-ci/tether/integration/actions/hookapi"
	"github.com/tether-ci/tether/internal/testing/actionsrunner"
)

// TestActionsSurvivesConnectionCuts cuts every API connection of the hook
// five times while a step runs: the step's output arrives exact, its exit
// code is the step's, and its file commands still reach the runner.
func TestActionsSurvivesConnectionCuts(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "actions-cuts")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	kubeconfig, proxy := proxiedKubeconfig(t, c)
	r := newActionsRunner(t, c, ns, actions.EnvKubeconfig+"="+kubeconfig)
	if res, err := r.PrepareJob(ctx, BashImage, nil, nil); err != nil || res.ExitCode != 0 {
		t.Fatalf("prepare_job: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
	}
	out := &safeBuffer{}
	r.Tee = out
	script, want := steadyScript(300, "0.05", 7)
	script = `echo "CUT=survived" >> "$GITHUB_ENV"` + "\n" + script
	cutsDone := cutRepeatedly(ctx, proxy, func() bool { return out.Len() > 0 }, 5, time.Second)
	res := mustStep(ctx, t, r, actionsrunner.Step{Script: script})
	stepSurvivedCuts(t, cutsDone, 5, res, want)
	if res.ExitCode != 7 || r.JobEnv["CUT"] != "survived" {
		t.Fatalf("exit %d (want 7), GITHUB_ENV %q; stderr %s", res.ExitCode, r.JobEnv, res.Stderr)
	}
	r.Tee = nil
	cleanupLeavesNothing(ctx, t, c, ns, r)
}

// TestActionsRunnerKilled kills the runner (the hook's whole process
// tree, SIGKILL) in the middle of a step and deletes its pod, as ARC does
// when a runner's container dies: the job's pod, owned by the runner's
// pod, goes too, with nothing else to clean it up.
func TestActionsRunnerKilled(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "actions-kill")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	c.CreatePod(ctx, t, SimplePod(ns, "runner-0", BusyboxImage, "sleep", "3600"))
	r := newActionsRunner(t, c, ns, actions.EnvRunnerPodName+"=runner-0")
	res, err := r.PrepareJob(ctx, BashImage, nil, nil)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("prepare_job: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
	}
	var st struct{ State hookapi.State }
	if err := json.Unmarshal([]byte(res.Response), &st); err != nil {
		t.Fatal(err)
	}
	out := &safeBuffer{}
	r.Tee, r.Die = out, true
	stepCtx, kill := context.WithCancel(ctx)
	go func() {
		for !strings.Contains(string(out.Bytes()), "started") && stepCtx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
		kill()
	}()
	res, err = r.RunScript(stepCtx, actionsrunner.Step{Script: "echo started; sleep 600"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == 0 {
		t.Fatalf("a killed hook exited 0")
	}
	if err := c.Client.CoreV1().Pods(ns).Delete(ctx, "runner-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.WaitFor(ctx, t, "the job's pod to go with the runner's", func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().Pods(ns).Get(ctx, st.State.Pod, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	waitNoTetherObjects(ctx, t, c, ns, 2*time.Minute)
}

// TestActionsCancel cancels a step the runner's way (SIGINT, then SIGTERM
// and SIGKILL if need be): the hook stops the step in the pod and exits
// non-zero, and the next step runs in the same pod.
func TestActionsCancel(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "actions-cancel")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	r := newActionsRunner(t, c, ns)
	if res, err := r.PrepareJob(ctx, BashImage, nil, nil); err != nil || res.ExitCode != 0 {
		t.Fatalf("prepare_job: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
	}
	out := &safeBuffer{}
	r.Tee = out
	stepCtx, stop := context.WithCancel(ctx)
	go func() {
		for !strings.Contains(string(out.Bytes()), "started") && stepCtx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
		stop()
	}()
	start := time.Now()
	res, err := r.RunScript(stepCtx, actionsrunner.Step{Script: "echo started; sleep 600; echo not-reached"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == 0 || strings.Contains(string(res.Stdout), "not-reached") || !strings.Contains(string(res.Stderr), "cancelled") {
		t.Fatalf("cancelled step: exit %d, stdout %q, stderr %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if took := time.Since(start); took > 2*time.Minute {
		t.Fatalf("the cancel took %s", took)
	}
	r.Tee = nil
	res = mustStep(ctx, t, r, actionsrunner.Step{Script: "echo next"})
	if res.ExitCode != 0 || string(res.Stdout) != "next\n" {
		t.Fatalf("the step after the cancel: exit %d, stdout %q, stderr %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	cleanupLeavesNothing(ctx, t, c, ns, r)
}

// TestActionsUnknownOutcomeFails makes the API server unreachable for
// good in the middle of a step: the step's outcome cannot be known, so
// the hook fails it (non-zero), never reports a success.
func TestActionsUnknownOutcomeFails(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "actions-lost")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	kubeconfig, proxy := proxiedKubeconfig(t, c)
	r := newActionsRunner(t, c, ns, actions.EnvKubeconfig+"="+kubeconfig, actions.EnvReconnectTimeout+"=10s")
	if res, err := r.PrepareJob(ctx, BashImage, nil, nil); err != nil || res.ExitCode != 0 {
		t.Fatalf("prepare_job: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
	}
	out := &safeBuffer{}
	r.Tee = out
	go func() {
		for !strings.Contains(string(out.Bytes()), "started") && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
		proxy.SetBlocked(true)
		proxy.CutAll()
	}()
	res := mustStep(ctx, t, r, actionsrunner.Step{Script: "echo started; sleep 5; echo done"})
	if res.ExitCode == 0 || !strings.Contains(string(res.Stderr), "outcome is unknown") {
		t.Fatalf("a step whose outcome is unknown: exit %d, stdout %q, stderr %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	proxy.SetBlocked(false)
	r.Tee = nil
	cleanupLeavesNothing(ctx, t, c, ns, r)
}

// TestActionsIdlePodEndsItself: a runner that vanishes between steps
// without its pod being deleted (no ACTIONS_RUNNER_POD_NAME here, so no
// owner) leaves a job pod that ends itself once no step ran for the idle
// timeout.
func TestActionsIdlePodEndsItself(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "actions-idle")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r := newActionsRunner(t, c, ns, actions.EnvIdleTimeout+"=15s")
	res, err := r.PrepareJob(ctx, BashImage, nil, nil)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("prepare_job: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
	}
	if res := mustStep(ctx, t, r, actionsrunner.Step{Script: "echo one step"}); res.ExitCode != 0 {
		t.Fatalf("step: exit %d, stderr %s", res.ExitCode, res.Stderr)
	}
	var st struct{ State hookapi.State }
	if err := json.Unmarshal([]byte(res.Response), &st); err != nil {
		t.Fatal(err)
	}
	// No more commands: the runner is gone.
	c.WaitFor(ctx, t, "the idle job pod to end", func(ctx context.Context) (bool, error) {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, st.State.Pod, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return p.Status.Phase == "Succeeded" || p.Status.Phase == "Failed", nil
	})
}

// stepSurvivedCuts checks a step that ran while cutRepeatedly cut the
// hook's API connections: all cuts hit a connection, the step's output
// is exactly want (nothing lost, nothing repeated), and the hook said the
// connection broke.
func stepSurvivedCuts(t *testing.T, cutsDone <-chan int, cuts int, res actionsrunner.Result, want string) {
	t.Helper()
	var hits int
	select {
	case hits = <-cutsDone:
	case <-time.After(30 * time.Second):
		t.Fatalf("the step ended (exit %d) before %d cuts hit a connection; stdout %d bytes, stderr:\n%s", res.ExitCode, cuts, len(res.Stdout), res.Stderr)
	}
	if hits < cuts {
		t.Fatalf("only %d cuts hit a connection; make the step longer", hits)
	}
	if !bytes.Equal(res.Stdout, []byte(want)) {
		t.Fatalf("after %d cuts the step's output differs: %d bytes, want %d; stderr %s", hits, len(res.Stdout), len(want), res.Stderr)
	}
	if !strings.Contains(string(res.Stderr), "nothing lost or repeated") {
		t.Errorf("the hook did not say the connection broke: stderr %s", res.Stderr)
	}
}
