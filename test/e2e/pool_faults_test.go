//go:build e2e

package e2e

// Faults of warm pods on the real node, through the real CLI: many jobs
// on a small pool, a warm pod deleted between its claim and the attach, a
// quota that holds fewer pods than the pool's size.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/internal/contract"
	"github.com/tether-ci/tether/internal/poolctl"
)

// TestPoolFaultTwentyJobsOnAPoolOfFive: 20 `tether run --pool` jobs at
// once on a pool of 5 warm pods that `tether pool serve` made all succeed;
// exactly 5 of them ran on warm pods, each on its own (no pod serves two
// jobs), the rest on cold pods, and every pod is deleted at its job's end.
// The controller is stopped for the burst, so that the pool is its 5 pods
// (a refill made while the jobs claim would be a sixth), and started
// again after it: it refills the pool to its size, never beyond.
func TestPoolFaultTwentyJobsOnAPoolOfFive(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ns := c.NewNamespace(t, "pool-twenty")
	pw := c.watchPools(ctx, t, ns)
	const size, jobs = 5, 20
	sp := c.servePool(ctx, t, ns, poolEntry("busy", size, "10m"))
	pc := sp.serve(t, "ctl-twenty")
	idle := c.waitIdle(ctx, t, ns, "busy", size, 3*time.Minute)
	pc.kill()
	isWarm := map[string]bool{}
	for _, p := range idle {
		isWarm[p.Name] = true
	}

	script := writeScripts(t, []string{"job.sh"}, map[string]string{"job.sh": "echo \"pod=$HOSTNAME job=$JOB\"\n"})[0]
	results := make([]cliResult, jobs)
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Go(func() {
			results[i] = runCLI(ctx, t, c, bin, "run", "--pool", "busy", "--image", BusyboxImage, "--helper-image", HelperImage,
				"-n", ns, "--env", fmt.Sprintf("JOB=%d", i), "--timeout", "5m", script)
		})
	}
	wg.Wait()
	servedBy := map[string]int{}
	hits := 0
	for i, r := range results {
		want := fmt.Sprintf(" job=%d\n", i)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "pod=") || !strings.HasSuffix(r.stdout, want) {
			t.Errorf("job %d: exit %d, stdout %q (want pod=… job=%d)\nstderr:\n%s", i, r.code, r.stdout, i, r.stderr)
			continue
		}
		pod := strings.TrimPrefix(strings.TrimSuffix(r.stdout, want), "pod=")
		servedBy[pod]++
		claimed := strings.Contains(r.stderr, "claimed a warm pod")
		if claimed != isWarm[pod] {
			t.Errorf("job %d ran on %s (warm: %v) but its log says claimed=%v:\n%s", i, pod, isWarm[pod], claimed, r.stderr)
		}
		if isWarm[pod] {
			hits++
		}
	}
	for pod, n := range servedBy {
		if n > 1 {
			t.Errorf("pod %s served %d jobs", pod, n)
		}
	}
	if hits != size {
		t.Errorf("%d jobs ran on warm pods, want exactly %d", hits, size)
	}
	// Every pod, warm or cold, is deleted at the end of its job.
	waitNoTetherObjects(ctx, t, c, ns, 2*time.Minute)

	sp.serve(t, "ctl-twenty-2")
	c.waitIdle(ctx, t, ns, "busy", size, 3*time.Minute)
	time.Sleep(2 * time.Second) // a surplus would be on its way now
	if pods, _ := c.poolPods(ctx, t, ns, "busy"); len(pods[contract.WarmIdle])+len(pods[contract.WarmStarting]) != size {
		t.Errorf("after the refill: %d idle and %d starting pods, want %d in all", len(pods[contract.WarmIdle]), len(pods[contract.WarmStarting]), size)
	}
	if m := pw.maxUnclaimed("busy"); m > size {
		t.Errorf("the pool had %d unclaimed pods at once (at %s), more than its size %d", m, pw.cause, size)
	}
}

// TestPoolFaultPodDeletedBeforeAttach: `tether run --pool` claims a warm
// pod that is deleted (grace period 0) after its claim and before the
// claim's attach reaches it — the CLI talks to the API server through a
// proxy that holds that attach until the pod is gone. The job starts on a
// cold pod at once and succeeds there: no script failure, no hang, and
// the job ran once.
func TestPoolFaultPodDeletedBeforeAttach(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := c.NewNamespace(t, "pool-gone")
	warm := startWarmPods(ctx, t, c, "gone", poolSettings(ns, BusyboxImage), 1)[0]
	proxy := c.startAPIProxy(t, ns)
	held := proxy.deleteBeforeFirstAttach(t, c, ns, warm)
	script := writeScripts(t, []string{"job.sh"}, map[string]string{"job.sh": "echo \"pod=$HOSTNAME\"\nexit 7\n"})[0]
	rctx, rcancel := context.WithTimeout(ctx, 3*time.Minute)
	defer rcancel()
	r := runCLI(rctx, t, c, bin, "run", "--kubeconfig", proxy.Kubeconfig, "--pool", "gone", "--image", BusyboxImage,
		"--helper-image", HelperImage, "--timeout", "5m", script)
	t.Logf("stderr:\n%s", r.stderr)
	if rctx.Err() != nil {
		t.Fatal("tether run hung on a warm pod deleted before its attach")
	}
	if held.Load() == 0 {
		t.Fatal("the job never attached to the warm pod it claimed")
	}
	if !strings.Contains(r.stderr, "claimed a warm pod") || !strings.Contains(r.stderr, "was gone before the job reached it") {
		t.Errorf("the log does not say the claimed pod was gone and a pod was started for the job")
	}
	if r.code != 7 || !strings.HasPrefix(r.stdout, "pod=") || r.stdout == "pod="+warm+"\n" || strings.Count(r.stdout, "pod=") != 1 {
		t.Fatalf("exit %d, stdout %q; want the script's 7 and its output once, from a cold pod", r.code, r.stdout)
	}
	waitNoTetherObjects(ctx, t, c, ns, 90*time.Second)
}

// TestPoolFaultQuotaClaimsAndColdStarts: a ResourceQuota holds only
// size-1 of the pool's warm pods (pods without activeDeadlineSeconds: the
// NotTerminating scope; a job's pod has one). The controller makes size-1
// pods and says why not more in a Warning Event; a job still claims a
// warm pod, and jobs still start cold pods, with --pool (another image)
// and without.
func TestPoolFaultQuotaClaimsAndColdStarts(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	ns := c.NewNamespace(t, "pool-quota")
	const size = 3
	if _, err := c.Client.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "warm-pods"},
		Spec: corev1.ResourceQuotaSpec{
			Hard:   corev1.ResourceList{corev1.ResourcePods: resource.MustParse(fmt.Sprint(size - 1))},
			Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.WaitFor(ctx, t, "the quota's status", func(ctx context.Context) (bool, error) {
		q, err := c.Client.CoreV1().ResourceQuotas(ns).Get(ctx, "warm-pods", metav1.GetOptions{})
		return err == nil && q.Status.Hard != nil, err
	})
	c.servePool(ctx, t, ns, poolEntry("q", size, "10m")).serve(t, "ctl-quota")
	idle := c.waitIdle(ctx, t, ns, "q", size-1, 3*time.Minute)
	var ev *corev1.Event
	c.WaitFor(ctx, t, "a FailedCreate Warning Event from the controller", func(ctx context.Context) (bool, error) {
		list, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + poolctl.ReasonFailedCreate})
		if err != nil {
			return false, err
		}
		for i, e := range list.Items {
			if e.Type == corev1.EventTypeWarning {
				ev = &list.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	if !strings.Contains(ev.Message, "exceeded quota") {
		t.Errorf("Event message %q does not say the quota is exceeded", ev.Message)
	}
	isWarm := map[string]bool{}
	for _, p := range idle {
		isWarm[p.Name] = true
	}
	script := writeScripts(t, []string{"job.sh"}, map[string]string{"job.sh": "echo \"pod=$HOSTNAME\"\n"})[0]
	for _, job := range []struct {
		name string
		args []string
		warm bool
	}{
		{"a pool's job", []string{"--pool", "q", "--image", BusyboxImage}, true},
		{"a job with another image, --pool", []string{"--pool", "q", "--image", BashImage}, false},
		{"a job without --pool", []string{"--image", BusyboxImage}, false},
	} {
		args := append([]string{"run", "-n", ns, "--helper-image", HelperImage, "--timeout", "5m"}, job.args...)
		r := runCLI(ctx, t, c, bin, append(args, script)...)
		pod := strings.TrimSuffix(strings.TrimPrefix(r.stdout, "pod="), "\n")
		if r.code != 0 || !strings.HasPrefix(r.stdout, "pod=") || isWarm[pod] != job.warm {
			t.Errorf("%s: exit %d, stdout %q (warm: %v, want %v)\nstderr:\n%s", job.name, r.code, r.stdout, isWarm[pod], job.warm, r.stderr)
		}
	}
}
