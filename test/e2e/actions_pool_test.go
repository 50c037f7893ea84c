//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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

// actionsPoolSpec is the spec of the warm pods of a pool for Actions
// jobs named name in ns: the job container's image BashImage, no
// services, no externals, as newActionsRunner's hook makes its pods with
// TETHER_ACTIONS_EXTERNALS_IMAGE=none.
func actionsPoolSpec(t *testing.T, ns, name string) kube.Spec {
	t.Helper()
	return poolFileSpec(t, ns, name, fmt.Sprintf(`  for: actions
  image: %s
  helper-image: %s
  pull-policy: Never
`, BashImage, HelperImage))
}

// TestActionsPoolWarmHitAndMiss: with TETHER_ACTIONS_POOL, a job whose
// container image is the pool's runs on the pool's warm pod (claimed by
// prepare_job, owned by the runner's pod from the claim), its script
// steps see the job container's variables, a container step runs in it,
// and cleanup_job deletes it; a job of another image starts a pod of its
// own. The job's secrets (a job container variable, a step variable) are
// never in the warm pod, a ConfigMap or Secret of the namespace, or the
// pod's log, before or after the claim.
func TestActionsPoolWarmHitAndMiss(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "apool")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	owner := c.CreatePod(ctx, t, SimplePod(ns, "runner-0", BusyboxImage, "sleep", "3600"))
	warm := startWarmPods(ctx, t, c, "act", actionsPoolSpec(t, ns, "act"), 1)
	const jobSecret, stepSecret = "job-secret-8d2e41", "step-secret-3f90ab"
	noSecret := func(when string) {
		t.Helper()
		pod, err := c.Client.CoreV1().Pods(ns).Get(ctx, warm[0], metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cms, _ := c.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		secs, _ := c.Client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
		b, _ := json.Marshal([]any{pod, cms, secs})
		rc, err := c.Client.CoreV1().Pods(ns).GetLogs(warm[0], &corev1.PodLogOptions{Container: kube.BuildContainer}).Stream(ctx)
		if err != nil {
			t.Fatalf("%s: read the pod's log: %v", when, err)
		}
		defer rc.Close()
		logs, _ := io.ReadAll(rc)
		for _, s := range []string{jobSecret, stepSecret} {
			if strings.Contains(string(b), s) || strings.Contains(string(logs), s) {
				t.Errorf("%s: the warm pod, a ConfigMap, a Secret or the pod's log holds %s", when, s)
			}
		}
	}
	noSecret("before the claim")
	hookEnv := []string{actions.EnvRunnerPodName + "=runner-0", actions.EnvPool + "=act", actions.EnvExternalsImage + "=" + actions.ExternalsOff}

	// Another image: a pod of its own; the warm pod stays idle.
	other := newActionsRunner(t, c, ns, hookEnv...)
	res, err := other.PrepareJob(ctx, BusyboxImage, nil, nil)
	if err != nil || res.ExitCode != 0 || strings.Contains(string(res.Stdout), "claimed warm pod") {
		t.Fatalf("prepare_job of another image: %v, exit %d\nstdout %s\nstderr %s", err, res.ExitCode, res.Stdout, res.Stderr)
	}
	if r := mustStep(ctx, t, other, actionsrunner.Step{Script: "hostname"}); strings.TrimSpace(string(r.Stdout)) == warm[0] {
		t.Fatalf("a job of another image ran on the warm pod %s", warm[0])
	}
	if res, err := other.CleanupJob(ctx); err != nil || res.ExitCode != 0 {
		t.Fatalf("cleanup_job: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
	}

	// The pool's image: a hit.
	hit := newActionsRunner(t, c, ns, hookEnv...)
	res, err = hit.PrepareJob(ctx, BashImage, map[string]string{"JOB_TOKEN": jobSecret}, nil)
	if err != nil || res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "claimed warm pod "+ns+"/"+warm[0]+" of pool act") {
		t.Fatalf("prepare_job of the pool's image: %v, exit %d\nstdout %s\nstderr %s", err, res.ExitCode, res.Stdout, res.Stderr)
	}
	var resp hookapi.PrepareResponse
	if err := json.Unmarshal([]byte(res.Response), &resp); err != nil || resp.State == nil || resp.State.Pod != warm[0] || resp.IsAlpine {
		t.Fatalf("response %s (%v): want the warm pod in the state", res.Response, err)
	}
	pod, err := c.Client.CoreV1().Pods(ns).Get(ctx, warm[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if refs := pod.OwnerReferences; len(refs) != 1 || refs[0].UID != owner.UID || pod.Labels[actions.LabelRunnerPod] != "runner-0" || pod.Labels[kube.LabelWarm] != kube.WarmClaimed {
		t.Errorf("claimed pod: owners %+v, labels %v; want the runner's pod and label, claimed", refs, pod.Labels)
	}
	if _, err := c.Client.CoreV1().Secrets(ns).Get(ctx, warm[0]+kube.PullSecretSuffix, metav1.GetOptions{}); err != nil {
		t.Errorf("the claimed pod's own pull Secret: %v", err)
	}
	r := mustStep(ctx, t, hit, actionsrunner.Step{
		Script: `hostname; [ "$JOB_TOKEN" = ` + jobSecret + ` ] && echo job-var; [ "$STEP_TOKEN" = ` + stepSecret + ` ] && echo step-var; echo "$HOME|$CI|$GITHUB_ACTIONS|$(pwd)"`,
		Env:    map[string]string{"STEP_TOKEN": stepSecret},
	})
	if want := warm[0] + "\njob-var\nstep-var\n/github/home|true|true|" + hit.Workspace() + "\n"; r.ExitCode != 0 || string(r.Stdout) != want {
		t.Errorf("script step on the warm pod: exit %d, stdout %q, want %q; stderr %s", r.ExitCode, r.Stdout, want, r.Stderr)
	}
	if r := mustStep(ctx, t, hit, actionsrunner.Step{Script: "echo failing; exit 4"}); r.ExitCode != 4 || string(r.Stdout) != "failing\n" {
		t.Errorf("failing step: exit %d, stdout %q", r.ExitCode, r.Stdout)
	}
	cr, err := hit.RunContainer(ctx, actionsrunner.ContainerStep{Image: BusyboxImage, EntryPoint: "sh", Args: []string{"-c", "echo in a container step"}})
	if err != nil || cr.ExitCode != 0 || string(cr.Stdout) != "in a container step\n" {
		t.Errorf("container step on the warm pod: %v, exit %d, stdout %q, stderr %s", err, cr.ExitCode, cr.Stdout, cr.Stderr)
	}
	noSecret("after the steps")
	cleanupLeavesNothing(ctx, t, c, ns, hit)
	waitGone(ctx, t, c, ns, warm[0])

	if misses := missesByReason(ctx, t, c, ns, "act"); len(misses) != 1 || misses["settings"] != 1 {
		t.Errorf("miss Events by reason %v, want settings=1 (another image)", misses)
	}
}

// TestActionsPoolClaimedPodLostBeforeProbe: prepare_job claims the
// pool's warm pod, which is deleted (grace period 0) before the hook's
// first attach to it (its readiness probe) reaches it — the hook talks to
// the API server through a proxy that holds that attach until the pod is
// gone. prepare_job says so, deletes the claimed pod's pull Secret, and
// starts the job's pod of its own at once: it succeeds, the job's steps
// run there, and cleanup_job leaves nothing.
func TestActionsPoolClaimedPodLostBeforeProbe(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "apool-lost")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	warm := startWarmPods(ctx, t, c, "lost", actionsPoolSpec(t, ns, "lost"), 1)[0]
	proxy := c.startAPIProxy(t, ns)
	held := proxy.deleteBeforeFirstAttach(t, c, ns, warm)
	r := newActionsRunner(t, c, ns, actions.EnvPool+"=lost", actions.EnvExternalsImage+"="+actions.ExternalsOff,
		actions.EnvKubeconfig+"="+proxy.Kubeconfig)
	pctx, pcancel := context.WithTimeout(ctx, 3*time.Minute)
	defer pcancel()
	res, err := r.PrepareJob(pctx, BashImage, map[string]string{"JOB_VAR": "v1"}, nil)
	if pctx.Err() != nil {
		t.Fatal("prepare_job hung on a claimed pod deleted before its probe")
	}
	t.Logf("prepare_job stdout:\n%s\nstderr:\n%s", res.Stdout, res.Stderr)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("prepare_job: %v, exit %d: want it to start the job's pod of its own", err, res.ExitCode)
	}
	if held.Load() == 0 {
		t.Fatal("prepare_job never attached to the warm pod it claimed")
	}
	out := string(res.Stdout)
	if !strings.Contains(out, "claimed warm pod "+ns+"/"+warm) || !strings.Contains(out, "was gone before the job reached it") || !strings.Contains(out, "created (image") {
		t.Errorf("stdout %q: want the claim, the lost pod and the created pod said", out)
	}
	var resp hookapi.PrepareResponse
	if err := json.Unmarshal([]byte(res.Response), &resp); err != nil || resp.State == nil || resp.State.Pod == warm {
		t.Fatalf("response %s (%v): want the created pod in the state", res.Response, err)
	}
	if _, err := c.Client.CoreV1().Secrets(ns).Get(ctx, warm+kube.PullSecretSuffix, metav1.GetOptions{}); err == nil {
		t.Errorf("the lost pod's pull Secret %s is left", warm+kube.PullSecretSuffix)
	}
	s := mustStep(ctx, t, r, actionsrunner.Step{Script: `hostname; echo "$JOB_VAR"; exit 3`})
	if want := resp.State.Pod + "\nv1\n"; s.ExitCode != 3 || string(s.Stdout) != want {
		t.Errorf("step: exit %d, stdout %q; want 3 and %q", s.ExitCode, s.Stdout, want)
	}
	cleanupLeavesNothing(ctx, t, c, ns, r)
}
