//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeMonitorGracePeriod is kube-controller-manager's default
// --node-monitor-grace-period (Kubernetes 1.32 and later), which the e2e
// node keeps: how long a node may post no status before it is NotReady.
const nodeMonitorGracePeriod = 50 * time.Second

// stopNodeAgents stops the node's kubelet and containerd (the containers
// keep running, as on a node whose agents died) and, when the test ends
// whatever happened, starts them again (scripts/e2e-cluster-up.sh starts
// what is down and keeps the node's state) and waits for the node to be
// Ready.
func stopNodeAgents(t *testing.T, c *Cluster) {
	dir := os.Getenv("TETHER_E2E_DIR")
	if dir == "" {
		t.Fatal("TETHER_E2E_DIR is not set: run the suite with `make e2e`")
	}
	up := filepath.Join(repoRoot(t), "scripts", "e2e-cluster-up.sh")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, up)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("restart the node's agents: %v\n%s", err, out)
			return
		}
		c.WaitFor(ctx, t, "node "+NodeName+" Ready again", func(ctx context.Context) (bool, error) {
			return nodeReady(ctx, c) == corev1.ConditionTrue, nil
		})
	})
	for _, name := range []string{"kubelet", "containerd"} {
		b, err := os.ReadFile(filepath.Join(dir, "pids", name+".pid"))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("stop %s (pid %d): %v", name, pid, err)
		}
	}
}

// nodeReady returns the node's Ready condition status ("" unknown).
func nodeReady(ctx context.Context, c *Cluster) corev1.ConditionStatus {
	n, err := c.Client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status
		}
	}
	return ""
}

// TestKubeDisruptionNodeLoss: the node's kubelet and containerd stop for
// good while a job runs: the job fails as soon as the node is NotReady
// (the node monitor grace period plus a few seconds, not the 2-minute
// reconnect timeout), saying so; once the node is back nothing of the job
// is left.
func TestKubeDisruptionNodeLoss(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "nodeloss")
	paths := writeScripts(t, []string{"job.sh"}, map[string]string{"job.sh": "echo started; sleep 600; echo never\n"})
	r := startJob(ctx, t, c, bin, "run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns, "--quiet", paths[0])
	r.waitOutput(t, "started\n", 90*time.Second)
	stopped := time.Now()
	stopNodeAgents(t, c)
	code := r.wait(t, nodeMonitorGracePeriod+60*time.Second)
	took := r.ended.Sub(stopped)
	t.Logf("the job ended %s after the node's agents stopped", took.Round(time.Millisecond))
	stderr := string(r.stderr.Bytes())
	if code == 0 || !strings.Contains(stderr, "node "+NodeName+" is NotReady since") || !strings.Contains(stderr, "its kubelet stopped posting status") {
		t.Errorf("exit %d; want a failure saying node %s is NotReady since … its kubelet stopped posting status", code, NodeName)
	}
	if took > nodeMonitorGracePeriod+20*time.Second {
		t.Errorf("the job took %s to fail; want the node monitor grace period (%s) plus a few seconds", took, nodeMonitorGracePeriod)
	}
	// The node comes back (the test's cleanup restarts it first, as
	// cleanups run last-in first-out): then nothing of the job is left.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		waitNoJobLeft(ctx, t, c, ns, 2*time.Minute)
	})
}
