//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/util/retry"

	"github.com/tether-ci/tether/client/kube"
)

// TestKubeTolerationAndNodeSelector: --node-selector and --toleration put
// the job's pod where a production runner would, and a pod that no node
// accepts is reported unschedulable (exit 125, the scheduler's reason,
// nothing left behind).
//
// The node is shared with tests running at the same time, so the test
// keeps its NoSchedule taint on it as briefly as it can:
//   - "no node matches" is proven without any taint, by a node selector on
//     a label no node has;
//   - the taint goes on only after the node got the test's own label, and
//     comes off as soon as the tolerating job's pod is bound to the node
//     and the job without the toleration was reported unschedulable
//     because of that taint (a couple of seconds). Pods of other tests
//     created in that window wait in the scheduler's queue and are
//     scheduled when the taint goes. A PreferNoSchedule taint would spare
//     them but could not show that a pod without the toleration is kept
//     off the node.
//
// The cleanup removes the label and the taint whatever happened.
func TestKubeTolerationAndNodeSelector(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "placement")
	suffix := rand.String(6)
	labelKey := "tether-e2e.test/pool-" + suffix
	taintKey := "tether-e2e.test/dedicated-" + suffix
	paths := writeScripts(t, []string{"job.sh"}, map[string]string{"job.sh": "echo placed\n"})
	base := []string{"run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns, "--node-selector", labelKey + "=yes"}

	// No node carries the label yet: nothing can run the pod.
	res := runCLI(ctx, t, c, bin, append(base, "--schedule-timeout", "2s", paths[0])...)
	t.Logf("no node with the label, stderr:\n%s", res.stderr)
	if res.code != 125 || !strings.Contains(res.stderr, "unschedulable") || !strings.Contains(res.stderr, "node affinity/selector") {
		t.Fatalf("exit code %d; want 125 and the scheduler's reason (node affinity/selector)", res.code)
	}
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)

	t.Cleanup(func() { c.updateNode(context.Background(), t, func(n *corev1.Node) { delete(n.Labels, labelKey) }) })
	c.updateNode(ctx, t, func(n *corev1.Node) { n.Labels[labelKey] = "yes" })
	if t.Failed() {
		t.FailNow()
	}

	// The taint window.
	untaint := func(ctx context.Context) {
		c.updateNode(ctx, t, func(n *corev1.Node) {
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(tn corev1.Taint) bool { return tn.Key == taintKey })
		})
	}
	t.Cleanup(func() { untaint(context.Background()) })
	c.updateNode(ctx, t, func(n *corev1.Node) {
		if len(n.Spec.Taints) > 0 {
			t.Errorf("node %s has taints already (%v): the test cannot tell its own taint's effect from theirs", n.Name, n.Spec.Taints)
			return
		}
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: taintKey, Value: "yes", Effect: corev1.TaintEffectNoSchedule})
	})
	if t.Failed() {
		t.FailNow()
	}
	tainted := time.Now()
	tolerating := startCLI(ctx, c, bin, append(base, "--toleration", taintKey+"=yes:NoSchedule", "--keep", paths[0])...)
	res = runCLI(ctx, t, c, bin, append(base, "--schedule-timeout", "1s", paths[0])...)
	t.Logf("tainted node, no toleration, stderr:\n%s", res.stderr)
	var kept *corev1.Pod
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	c.WaitFor(wctx, t, "the tolerating job's pod to be bound to the tainted node", func(ctx context.Context) (bool, error) {
		kept = tolerantPod(ctx, t, c, ns, taintKey)
		return kept != nil && kept.Spec.NodeName != "", nil
	})
	cancel()
	untaint(ctx)
	t.Logf("the node was tainted for %s", time.Since(tainted).Round(100*time.Millisecond))
	// The scheduler does not name the taint; the node had none of its own
	// (checked above), so the untolerated one is the test's.
	if res.code != 125 || !strings.Contains(res.stderr, "unschedulable") || !strings.Contains(res.stderr, "untolerated taint") {
		t.Fatalf("without the toleration: exit code %d; want 125 and the scheduler's reason (untolerated taint)", res.code)
	}

	res = <-tolerating
	t.Logf("with the toleration, stderr:\n%s", res.stderr)
	if res.code != 0 || res.stdout != "placed\n" {
		t.Fatalf("with the toleration: exit code %d stdout %q; want 0 and placed", res.code, res.stdout)
	}
	kept, err := c.Client.CoreV1().Pods(ns).Get(ctx, kept.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the pod kept with --keep: %v", err)
	}
	if kept.Spec.NodeName != NodeName || kept.Spec.NodeSelector[labelKey] != "yes" {
		t.Fatalf("pod on node %q with node selector %v; want %s and %s=yes", kept.Spec.NodeName, kept.Spec.NodeSelector, NodeName, labelKey)
	}
	if err := c.Client.CoreV1().Pods(ns).Delete(ctx, kept.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete the kept pod: %v", err)
	}
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}

// startCLI runs the tether CLI like runCLI, in the background: the result
// arrives on the channel (exit code -1 and the error in stderr when it
// could not run at all).
func startCLI(ctx context.Context, c *Cluster, bin string, args ...string) <-chan cliResult {
	out := make(chan cliResult, 1)
	go func() {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			code = ee.ExitCode()
		case err != nil:
			code = -1
			stderr.WriteString("run tether: " + err.Error())
		}
		out <- cliResult{stdout.String(), stderr.String(), code}
	}()
	return out
}

// tolerantPod returns the Tether pod in ns that tolerates taintKey
// (Equal yes, NoSchedule), or nil.
func tolerantPod(ctx context.Context, t testing.TB, c *Cluster, ns, taintKey string) *corev1.Pod {
	t.Helper()
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedByValue})
	if err != nil {
		t.Fatal(err)
	}
	want := corev1.Toleration{Key: taintKey, Operator: corev1.TolerationOpEqual, Value: "yes", Effect: corev1.TaintEffectNoSchedule}
	for i := range pods.Items {
		if slices.Contains(pods.Items[i].Spec.Tolerations, want) {
			return &pods.Items[i]
		}
	}
	return nil
}

// updateNode applies edit to the e2e node (retrying on conflicts: other
// tests and the kubelet update it too).
func (c *Cluster) updateNode(ctx context.Context, t testing.TB, edit func(*corev1.Node)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		edit(n)
		_, err = c.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Errorf("update node %s: %v", NodeName, err)
	}
}
