//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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

// nodeLossSlack is how much later than the grace period after the agents
// stopped a job may fail: the node lifecycle controller looks every 5 s
// (--node-monitor-period), the job reads the node every 3 s and reconnects
// at most every 5 s, and this shared machine is slow.
const nodeLossSlack = 20 * time.Second

// stopNodeAgents stops the node's kubelet and containerd with SIGKILL (the
// containers keep running, as on a node whose agents died) and returns
// restore, which starts them again (scripts/e2e-cluster-up.sh starts what
// is down and keeps the node's state) and waits for the node to be Ready
// and untainted. restore runs once; it also runs when the test ends,
// whatever happened.
func stopNodeAgents(t *testing.T, c *Cluster) (restore func()) {
	dir := os.Getenv("TETHER_E2E_DIR")
	if dir == "" {
		t.Fatal("TETHER_E2E_DIR is not set: run the suite with `make e2e`")
	}
	up := filepath.Join(repoRoot(t), "scripts", "e2e-cluster-up.sh")
	var once sync.Once
	restore = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, up).CombinedOutput()
			if err != nil {
				t.Errorf("restart the node's agents: %v\n%s", err, out)
				return
			}
			c.WaitFor(ctx, t, "node "+NodeName+" Ready again, without the taints of a lost node", func(ctx context.Context) (bool, error) {
				n, err := c.Client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				for _, taint := range n.Spec.Taints {
					if taint.Key == corev1.TaintNodeUnreachable || taint.Key == corev1.TaintNodeNotReady {
						return false, nil
					}
				}
				return nodeReady(n) == corev1.ConditionTrue, nil
			})
		})
	}
	t.Cleanup(restore)
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
	return restore
}

// nodeReady returns n's Ready condition status ("" when it has none).
func nodeReady(n *corev1.Node) corev1.ConditionStatus {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status
		}
	}
	return ""
}

// checkNodeLossFailure checks that a job that ran on the node whose agents
// stopped at stopped ended at ended in time, with its one line in out.
func checkNodeLossFailure(t *testing.T, stopped, ended time.Time, out string) {
	t.Helper()
	took := ended.Sub(stopped)
	t.Logf("the job ended %s after the node's agents stopped", took.Round(time.Millisecond))
	if !strings.Contains(out, "node "+NodeName+" is NotReady since") || !strings.Contains(out, "its kubelet stopped posting status") {
		t.Errorf("no line saying node %s is NotReady since … its kubelet stopped posting status in:\n%s", NodeName, out)
	}
	if took > nodeMonitorGracePeriod+nodeLossSlack {
		t.Errorf("the job took %s to fail; want the node monitor grace period (%s) plus at most %s", took, nodeMonitorGracePeriod, nodeLossSlack)
	}
}

// TestKubeDisruptionNodeLoss: the node's kubelet and containerd stop for
// good while a `tether run --quiet` job runs: the job fails as soon as the
// node is NotReady (the node monitor grace period plus a few seconds, not
// the 2-minute reconnect timeout) with exit code 125 and the node's
// condition on one line; once the node is back nothing of the job is left.
func TestKubeDisruptionNodeLoss(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "nodeloss")
	paths := writeScripts(t, []string{"job.sh"}, map[string]string{"job.sh": "echo started; sleep 600; echo never\n"})
	r := startJob(ctx, t, c, bin, "run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns, "--quiet", paths[0])
	r.waitOutput(t, "started\n", 90*time.Second)
	stopped := time.Now()
	restore := stopNodeAgents(t, c)
	code := r.wait(t, nodeMonitorGracePeriod+90*time.Second)
	stderr := string(r.stderr.Bytes())
	checkNodeLossFailure(t, stopped, r.ended, stderr)
	if code != 125 {
		t.Errorf("exit %d; want 125 (a Tether failure)", code)
	}
	if strings.Contains(string(r.stdout.Bytes()), "never") {
		t.Errorf("stdout %q: the job went on", r.stdout.Bytes())
	}
	restore()
	waitNoJobLeft(ctx, t, c, ns, 2*time.Minute)
}
