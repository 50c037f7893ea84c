//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// podDeletion watches pod ns/name from now on; the function it returns
// waits (up to timeout) until the pod is gone and returns the grace period
// the API server recorded when the pod's deletion began
// (metadata.deletionGracePeriodSeconds).
func podDeletion(ctx context.Context, t *testing.T, c *Cluster, ns, name string) func(timeout time.Duration) int64 {
	t.Helper()
	pod, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod %s/%s: %v", ns, name, err)
	}
	w, err := c.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
		ResourceVersion: pod.ResourceVersion,
	})
	if err != nil {
		t.Fatalf("watch pod %s/%s: %v", ns, name, err)
	}
	return func(timeout time.Duration) int64 {
		t.Helper()
		defer w.Stop()
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		grace := int64(-1)
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatalf("the watch of pod %s/%s ended before the pod was gone", ns, name)
				}
				p, isPod := ev.Object.(*corev1.Pod)
				if !isPod {
					t.Fatalf("watch of pod %s/%s: %s %T", ns, name, ev.Type, ev.Object)
				}
				if grace < 0 && p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil {
					grace = *p.DeletionGracePeriodSeconds
				}
				if ev.Type == watch.Deleted {
					return grace
				}
			case <-timer.C:
				c.DumpPod(t, ns, name)
				t.Fatalf("pod %s/%s still exists %s after cleanup (deletion grace %d s)", ns, name, timeout, grace)
			}
		}
	}
}

// TestGitLabDriverTerminationGrace: a job service that ignores SIGTERM
// (busybox httpd as PID 1) would keep its pod terminating for Kubernetes'
// default 30 s after cleanup. With termination-grace-period 1 in the driver
// config the pod carries terminationGracePeriodSeconds 1 and cleanup's
// delete asks for 1 s, and the pod is gone; a pod prepared without the
// setting gets cleanup's --termination-grace-period all the same.
func TestGitLabDriverTerminationGrace(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-grace")
	stubborn := []map[string]any{{
		"name":       BusyboxImage,
		"alias":      "web",
		"entrypoint": []string{"sh", "-c"},
		"command":    []string{"mkdir -p /tmp/www && echo up > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www"},
	}}
	podName := func(r *runnerStandIn) string { return "tether-gitlab-r7-j" + r.jobID }

	// 1. The setting in the driver's config: on the pod and on the delete.
	r := newRunnerStandInJob(t, c, ns, standInJob{Services: stubborn, Config: "termination-grace-period: 1\n", Timeout: 5 * time.Minute})
	r.prepare(ctx)
	pod, err := c.Client.CoreV1().Pods(ns).Get(ctx, podName(r), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g == nil || *g != 1 {
		t.Fatalf("the job pod's terminationGracePeriodSeconds is %v; want 1", g)
	}
	// The service runs (it answers) before the pod is deleted.
	got, code, _ := r.run(ctx, "build_script", `for i in $(seq 1 30); do
  if body=$(wget -q -O - http://web:8080/index.html 2>/dev/null); then echo "$body"; exit 0; fi
  sleep 1
done
echo "the service never answered"
exit 9
`, nil)
	if code != 0 || got != "up\n" {
		t.Fatalf("build_script: exit %d, output %q; want the service's page", code, got)
	}
	gone := podDeletion(ctx, t, c, ns, podName(r))
	r.cleanup(ctx)
	if grace := gone(3 * time.Minute); grace != 1 {
		t.Fatalf("cleanup deleted the pod with a grace of %d s; want 1", grace)
	}

	// 2. A pod prepared without the setting (Kubernetes' default grace):
	// cleanup's own setting is the grace of its delete.
	r2 := newRunnerStandInJob(t, c, ns, standInJob{Services: stubborn, Timeout: 5 * time.Minute})
	r2.prepare(ctx)
	pod, err = c.Client.CoreV1().Pods(ns).Get(ctx, podName(r2), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil && *g == 1 {
		t.Fatalf("a pod prepared without the setting has terminationGracePeriodSeconds 1")
	}
	gone = podDeletion(ctx, t, c, ns, podName(r2))
	if out, err := r2.command(ctx, "cleanup", "--termination-grace-period", "1s").CombinedOutput(); err != nil {
		t.Fatalf("cleanup: %v\n%s", err, out)
	}
	if grace := gone(3 * time.Minute); grace != 1 {
		t.Fatalf("cleanup --termination-grace-period 1s deleted the pod with a grace of %d s; want 1", grace)
	}
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}
