//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/internal/contract"
)

// TestPoolSettingsChangeWhileAJobRuns: the pools file changes while a
// `tether run --pool` job runs on a warm pod of the old settings: the job
// finishes as on any pod (its output and exit code) on the pod it
// claimed, which the controller leaves alone; the pool's new warm pod has
// the new settings. A job with another image then misses (it runs on a
// pod of its own), and the controller counts the miss by its reason.
func TestPoolSettingsChangeWhileAJobRuns(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := c.NewNamespace(t, "poolchange")
	sp := c.servePool(ctx, t, ns, poolEntry("s", 1, "10m"))
	pc := sp.serve(t, "ctl-s")
	old := c.waitIdle(ctx, t, ns, "s", 1, 2*time.Minute)[0]
	oldHash := old.Labels[contract.LabelPoolHash]

	script := writeScripts(t, []string{"job.sh"}, map[string]string{"job.sh": "echo \"start on $HOSTNAME\"\nsleep 8\necho done\nexit 3\n"})[0]
	done := make(chan cliResult, 1)
	go func() {
		done <- runCLI(ctx, t, c, bin, "run", "--pool", "s", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns, "--timeout", "5m", script)
	}()
	c.WaitFor(ctx, t, "the job's claim of "+old.Name, func(ctx context.Context) (bool, error) {
		pods, _ := c.poolPods(ctx, t, ns, "s")
		return len(pods[contract.WarmClaimed]) == 1 && pods[contract.WarmClaimed][0].Name == old.Name, nil
	})
	poolWriteFile(t, sp.Config, poolEntry("s", 1, "10m", "memory: 64Mi"))
	c.WaitFor(ctx, t, "a warm pod of the new settings while the job runs", func(ctx context.Context) (bool, error) {
		pods, _ := c.poolPods(ctx, t, ns, "s")
		idle := pods[contract.WarmIdle]
		return len(idle) == 1 && idle[0].Labels[contract.LabelPoolHash] != oldHash && len(pods[contract.WarmClaimed]) == 1, nil
	})
	select {
	case <-done:
		t.Fatal("the job ended before the new settings' pod was ready: the test needs a longer job")
	default:
	}
	r := <-done
	if r.code != 3 || r.stdout != "start on "+old.Name+"\ndone\n" || !strings.Contains(r.stderr, "claimed a warm pod") {
		t.Fatalf("the job on the old pod: exit %d, stdout %q; want 3 and its whole output on %s\nstderr:\n%s", r.code, r.stdout, old.Name, r.stderr)
	}

	// Another image: a miss, a pod of its own; the leader counts it.
	r = runCLI(ctx, t, c, bin, "run", "--pool", "s", "--image", BashImage, "--helper-image", HelperImage, "-n", ns, "--timeout", "5m", script)
	if r.code != 3 || strings.Contains(r.stderr, "claimed a warm pod") || !strings.HasSuffix(r.stdout, "\ndone\n") {
		t.Fatalf("a job with another image: exit %d, stdout %q; want 3 on a pod of its own\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	c.WaitFor(ctx, t, "the controller's count of the miss", func(context.Context) (bool, error) {
		return pc.metric(`tether_pool_misses_total{pool="s",reason="settings"}`) == 1, nil
	})
}
