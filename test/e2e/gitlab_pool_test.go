//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/client/kube"
)

// gitlabPoolSpec is the warm pods' settings of a pool for gitlab jobs
// whose keys are the stand-in driver config's.
func gitlabPoolSpec(t *testing.T, ns, name string) kube.Spec {
	t.Helper()
	return poolFileSpec(t, ns, name, fmt.Sprintf(`  for: gitlab
  image: %s
  helper-image: %s
  gitlab-helper-image: %s
  pull-policy: Never
`, BashImage, HelperImage, GitImage))
}

// TestGitLabPoolWarmHitAndMiss: with the driver's pool setting, a job
// whose image is the pool's runs every stage on the pool's warm pod
// (claimed by prepare, found again by each stage, deleted by cleanup); a
// job with another image, and a job once the pool is empty, start pods
// of their own, and each miss is an Event with its reason.
func TestGitLabPoolWarmHitAndMiss(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "glpool")
	warm := startWarmPods(ctx, t, c, "gl", gitlabPoolSpec(t, ns, "gl"), 1)

	// Another image: a miss (settings); the warm pod stays idle.
	other := newRunnerStandInJob(t, c, ns, standInJob{Image: BusyboxImage, Config: "pool: gl\n"})
	out := other.prepare(ctx)
	if strings.Contains(out, "claimed warm pod") || !strings.Contains(out, "created") {
		t.Fatalf("a job with another image: prepare said\n%s\nwant a pod of its own", out)
	}
	got, code, _ := other.run(ctx, "step_script", "hostname\n", nil)
	if code != 0 || strings.TrimSpace(got) == warm[0] {
		t.Fatalf("a job with another image ran on %q (exit %d), want its own pod, not the warm %s", got, code, warm[0])
	}
	other.cleanup(ctx)

	// The pool's image: a hit. Every stage runs on the warm pod.
	hit := newRunnerStandInJob(t, c, ns, standInJob{Config: "pool: gl\n"})
	out = hit.prepare(ctx)
	if !strings.Contains(out, "claimed warm pod "+ns+"/"+warm[0]) {
		t.Fatalf("a job with the pool's image: prepare said\n%s\nwant the warm pod %s claimed", out, warm[0])
	}
	// Idle, the pod was evictable; claimed, it is protected as a created
	// pod: a PodDisruptionBudget of its own selecting it by its job label.
	pdb, err := c.Client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, warm[0], metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the claimed pod's PodDisruptionBudget: %v", err)
	}
	if job := pdb.Spec.Selector.MatchLabels[kube.LabelJob]; job == "" || len(pdb.OwnerReferences) != 1 || pdb.OwnerReferences[0].Name != warm[0] {
		t.Errorf("budget %+v: want one selecting the claimed pod's job, owned by it", pdb.Spec)
	}
	got, code, _ = hit.run(ctx, "step_script", "hostname\necho \"sum=$((40+2))\"\n", nil)
	if code != 0 || got != warm[0]+"\nsum=42\n" {
		t.Fatalf("step_script on the warm pod: exit %d output %q, want its host name %s and sum=42", code, got, warm[0])
	}
	got, code, written := hit.run(ctx, "build_script", "echo building\nexit 3\n", nil)
	if code != standInBuildFailure || written != "3" || got != "building\n" {
		t.Fatalf("build_script on the warm pod: exit %d, BUILD_EXIT_CODE_FILE %q, output %q; want %d, 3, building", code, written, got, standInBuildFailure)
	}
	hit.cleanup(ctx)
	waitGone(ctx, t, c, ns, warm[0])

	// The pool is empty now: a miss (empty), a pod of its own.
	late := newRunnerStandInJob(t, c, ns, standInJob{Config: "pool: gl\n"})
	out = late.prepare(ctx)
	if strings.Contains(out, "claimed warm pod") {
		t.Fatalf("a job of an empty pool: prepare said\n%s\nwant a pod of its own", out)
	}
	if got, code, _ := late.run(ctx, "step_script", "echo cold\n", nil); code != 0 || got != "cold\n" {
		t.Fatalf("step_script on a cold pod: exit %d output %q", code, got)
	}
	late.cleanup(ctx)
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)

	// Each miss is an Event that tether pool status counts by reason.
	if misses := missesByReason(ctx, t, c, ns, "gl"); len(misses) != 2 || misses["settings"] != 1 || misses["empty"] != 1 {
		t.Errorf("miss Events by reason %v, want settings=1 (another image) and empty=1 (the pool used up)", misses)
	}
}

// waitGone waits until pod name of ns is deleted.
func waitGone(ctx context.Context, t *testing.T, c *Cluster, ns, name string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("pod %s/%s is still there a minute after cleanup", ns, name)
}
