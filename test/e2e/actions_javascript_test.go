//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/actions"
	"github.com/tether-ci/tether/integration/actions/hookapi"
	"github.com/tether-ci/tether/internal/testing/actionsrunner"
)

// Images of the JavaScript-action tests (scripts/build-images.sh).
var (
	// ActionsRunnerImage stands in for ARC's runner image: node 20 in
	// /home/runner/externals.
	ActionsRunnerImage = "localhost/tether/actions-runner:" + imageTag()
	// ActionsJobImage is a job container in which that node runs;
	// ActionsJobAlpineImage the same with /etc/alpine-release.
	ActionsJobImage       = "localhost/tether/actions-job:" + imageTag()
	ActionsJobAlpineImage = "localhost/tether/actions-job-alpine:" + imageTag()
)

// The test action (test/actions/js-action) as the runner downloaded it.
const (
	jsAction    = "tether-ci/js-action"
	jsActionRef = "v1"
	jsActionDir = actions.ActionsDir + "/" + jsAction + "/" + jsActionRef
)

// newJSRunner is newActionsRunner with the test action downloaded.
func newJSRunner(t *testing.T, c *Cluster, ns string, extraEnv ...string) *actionsrunner.Runner {
	t.Helper()
	r := newActionsRunner(t, c, ns, extraEnv...)
	if err := r.DownloadAction(filepath.Join(repoRoot(t), "test", "actions", "js-action"), jsAction, jsActionRef); err != nil {
		t.Fatal(err)
	}
	return r
}

// jsStep runs the test action's main stage (or post.js with state).
func jsStep(ctx context.Context, t *testing.T, r *actionsrunner.Runner, script string, inputs, state map[string]string) (actionsrunner.Result, map[string]string) {
	t.Helper()
	res, saved, err := r.RunNode(ctx, actionsrunner.NodeStep{Action: jsAction, Ref: jsActionRef, Script: script, Inputs: inputs, State: state})
	if err != nil {
		t.Fatalf("%s: %v\nstdout %q\nstderr %s", script, err, res.Stdout, res.Stderr)
	}
	return res, saved
}

// TestActionsJSAction runs the test JavaScript action in the job
// container: the externals come from the runner pod's image (its container
// named runner) by the init container, the action's directory travels with
// its first step; inputs (one with a dash), partial lines, stderr, outputs,
// env, state, the exit code, and the post step with the saved state.
func TestActionsJSAction(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "actions-js")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	runner := SimplePod(ns, "runner-0", BusyboxImage, "sleep", "3600")
	runner.Spec.Containers = append(runner.Spec.Containers, corev1.Container{
		Name: "runner", Image: ActionsRunnerImage, ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3600"}})
	c.CreatePod(ctx, t, runner)
	r := newJSRunner(t, c, ns, actions.EnvRunnerPodName+"=runner-0")
	res, err := r.PrepareJob(ctx, ActionsJobImage, nil, nil)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("prepare_job: %v, exit %d\nstdout %s\nstderr %s", err, res.ExitCode, res.Stdout, res.Stderr)
	}
	var resp hookapi.PrepareResponse
	if err := json.Unmarshal([]byte(res.Response), &resp); err != nil {
		t.Fatal(err)
	}
	pod, err := c.Client.CoreV1().Pods(ns).Get(ctx, resp.State.Pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	copied := false
	for _, ic := range pod.Spec.InitContainers {
		copied = copied || (ic.Name == kube.ImageCopyPrefix+"externals" && ic.Image == ActionsRunnerImage)
	}
	if resp.IsAlpine || !copied {
		t.Fatalf("isAlpine %v, init containers %+v: want the externals copied out of %s", resp.IsAlpine, pod.Spec.InitContainers, ActionsRunnerImage)
	}

	res, saved := jsStep(ctx, t, r, "index.js", map[string]string{"message": "hi there", "exit-code": "0"}, nil)
	wantStart := "js-action: part one, part two: hi there\njs-action: node v20."
	wantMid := " at /__e/node20/bin/node, action path " + jsActionDir + "\n"
	if res.ExitCode != 0 || !strings.HasPrefix(string(res.Stdout), wantStart) || !strings.Contains(string(res.Stdout), wantMid) ||
		!strings.HasSuffix(string(res.Stdout), "\njs-action: no newline at the end") || string(res.Stderr) != "js-action: on stderr: hi there\n" {
		t.Fatalf("main: exit %d, stdout %q, stderr %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if r.Outputs["greeting"] != "hello hi there" || r.JobEnv["JS_ACTION_MESSAGE"] != "hi there" || saved["saved"] != "hi there" {
		t.Errorf("outputs %q, env %q, state %q", r.Outputs, r.JobEnv, saved)
	}
	var st struct{ State hookapi.State }
	if err := json.Unmarshal([]byte(res.Response), &st); err != nil || len(st.State.Actions) != 1 || st.State.Actions[0] != jsActionDir || st.State.Pod != resp.State.Pod {
		t.Errorf("the step's response %q (%v): want the state with %s delivered", res.Response, err, jsActionDir)
	}

	// A run: step sees the action's env and files; the same action again
	// (already delivered) fails with its exit code.
	res = mustStep(ctx, t, r, actionsrunner.Step{Script: `echo "$JS_ACTION_MESSAGE"; ls ` + jsActionDir})
	if res.ExitCode != 0 || string(res.Stdout) != "hi there\naction.yml\nindex.js\npost.js\n" {
		t.Errorf("run: step after the action: exit %d, stdout %q, stderr %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	res, _ = jsStep(ctx, t, r, "index.js", map[string]string{"message": "failing", "exit-code": "3"}, nil)
	if res.ExitCode != 3 || !strings.Contains(string(res.Stdout), "part two: failing\n") {
		t.Errorf("main with exit-code 3: exit %d, stdout %q, stderr %s", res.ExitCode, res.Stdout, res.Stderr)
	}

	// The post step, with the first main stage's state.
	res, _ = jsStep(ctx, t, r, "post.js", nil, saved)
	if res.ExitCode != 0 || string(res.Stdout) != "js-action post: saved=hi there\n" || r.Outputs["post-saved"] != "hi there" {
		t.Errorf("post: exit %d, stdout %q, outputs %q, stderr %s", res.ExitCode, res.Stdout, r.Outputs, res.Stderr)
	}
	cleanupLeavesNothing(ctx, t, c, ns, r)
}

// TestActionsJSAlpine: a job image with /etc/alpine-release makes
// prepare_job answer isAlpine, so the runner runs node20_alpine; the
// externals' image is the explicit setting here.
func TestActionsJSAlpine(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "actions-js-alpine")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	r := newJSRunner(t, c, ns, actions.EnvExternalsImage+"="+ActionsRunnerImage)
	if res, err := r.PrepareJob(ctx, ActionsJobAlpineImage, nil, nil); err != nil || res.ExitCode != 0 {
		t.Fatalf("prepare_job: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
	}
	if !r.IsAlpine {
		t.Fatal("prepare_job did not answer isAlpine for an image with /etc/alpine-release")
	}
	res, _ := jsStep(ctx, t, r, "index.js", map[string]string{"message": "alpine"}, nil)
	if res.ExitCode != 0 || !strings.Contains(string(res.Stdout), " at /__e/node20_alpine/bin/node, ") {
		t.Errorf("exit %d, stdout %q, stderr %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	cleanupLeavesNothing(ctx, t, c, ns, r)
}

// TestActionsJSExternals: with the externals switched off a JavaScript
// step fails and says which setting to set; an externals directory the
// image does not have fails prepare_job, naming the image and directory.
func TestActionsJSExternals(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "actions-js-ext")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	r := newJSRunner(t, c, ns, actions.EnvRunnerImage+"="+ActionsRunnerImage, actions.EnvExternalsImage+"="+actions.ExternalsOff)
	res, err := r.PrepareJob(ctx, ActionsJobImage, nil, nil)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("prepare_job: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
	}
	res, _ = jsStep(ctx, t, r, "index.js", map[string]string{"message": "x"}, nil)
	all := string(res.Stdout) + string(res.Stderr)
	if res.ExitCode == 0 || !strings.Contains(all, "/__e/node20/bin/node is not in the job container") || !strings.Contains(all, actions.EnvExternalsImage) {
		t.Errorf("a JavaScript step without externals: exit %d, stdout %q, stderr %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	cleanupLeavesNothing(ctx, t, c, ns, r)

	bad := newJSRunner(t, c, ns, actions.EnvExternalsImage+"="+ActionsRunnerImage, actions.EnvExternalsDir+"=/no/such/externals")
	res, err = bad.PrepareJob(ctx, ActionsJobImage, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == 0 || !strings.Contains(string(res.Stderr), "copying /no/such/externals out of image "+ActionsRunnerImage) ||
		!strings.Contains(string(res.Stderr), actions.EnvExternalsDir) {
		t.Errorf("a missing externals directory: exit %d, stderr %s", res.ExitCode, res.Stderr)
	}
	cleanupLeavesNothing(ctx, t, c, ns, bad)
}

// TestActionsJSConnectionCuts cuts every API connection of the hook three
// times while a JavaScript step prints: its output arrives exact, its exit
// code and outputs reach the runner.
func TestActionsJSConnectionCuts(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "actions-js-cuts")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	kubeconfig, proxy := proxiedKubeconfig(t, c)
	r := newJSRunner(t, c, ns, actions.EnvKubeconfig+"="+kubeconfig, actions.EnvExternalsImage+"="+ActionsRunnerImage)
	if res, err := r.PrepareJob(ctx, ActionsJobImage, nil, nil); err != nil || res.ExitCode != 0 {
		t.Fatalf("prepare_job: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
	}
	out := &safeBuffer{}
	r.Tee = out
	cutsDone := cutRepeatedly(ctx, proxy, func() bool { return bytes.Contains(out.Bytes(), []byte("tick 1\n")) }, 3, time.Second)
	res, _ := jsStep(ctx, t, r, "index.js", map[string]string{"message": "cut", "exit-code": "5", "ticks": "50"}, nil)
	var hits int
	select {
	case hits = <-cutsDone:
	case <-time.After(30 * time.Second):
		t.Fatalf("the step ended (exit %d) before 3 cuts hit a connection; stdout %q, stderr:\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	var ticks strings.Builder
	for i := 1; i <= 50; i++ {
		fmt.Fprintf(&ticks, "tick %d\n", i)
	}
	if !strings.HasSuffix(string(res.Stdout), ticks.String()+"js-action: no newline at the end") {
		t.Fatalf("after %d cuts the output differs: %q; stderr %s", hits, res.Stdout, res.Stderr)
	}
	if !strings.Contains(string(res.Stderr), "nothing lost or repeated") {
		t.Errorf("the hook did not say the connection broke: stderr %s", res.Stderr)
	}
	if res.ExitCode != 5 || r.Outputs["greeting"] != "hello cut" {
		t.Errorf("exit %d (want 5), outputs %q; stderr %s", res.ExitCode, r.Outputs, res.Stderr)
	}
	r.Tee = nil
	cleanupLeavesNothing(ctx, t, c, ns, r)
}
