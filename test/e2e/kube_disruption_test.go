//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/tether-ci/tether/client/kube"
)

// The disruption tests that cordon or drain the node, or stop its kubelet,
// disturb every other test on it: they are never parallel (make e2e runs
// the suite's tests one at a time), and each restores the node
// (uncordoned, every component running, Ready) whatever happens.

// bgRun is a `tether run` running in the background.
type bgRun struct {
	stdout, stderr safeBuffer
	done           chan struct{}
	code           int
	ended          time.Time
}

// startJob starts the tether CLI with args against the e2e node.
func startJob(ctx context.Context, t *testing.T, c *Cluster, bin string, args ...string) *bgRun {
	t.Helper()
	r := &bgRun{done: make(chan struct{})}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	cmd.Stdout, cmd.Stderr = &r.stdout, &r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start tether %v: %v", args, err)
	}
	go func() {
		defer close(r.done)
		err := cmd.Wait()
		r.ended = time.Now()
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		} else if err != nil {
			r.code = -1
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-r.done
	})
	return r
}

// waitOutput waits until the job's output holds want.
func (r *bgRun) waitOutput(t *testing.T, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for !strings.Contains(string(r.stdout.Bytes()), want) {
		select {
		case <-r.done:
			t.Fatalf("tether ended (exit %d) before its output held %q; stdout %q, stderr:\n%s", r.code, want, r.stdout.Bytes(), r.stderr.Bytes())
		case <-deadline:
			t.Fatalf("no %q in the job's output within %s; stdout %q, stderr:\n%s", want, timeout, r.stdout.Bytes(), r.stderr.Bytes())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// wait waits for tether to end and returns its exit code.
func (r *bgRun) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-r.done:
		t.Logf("tether exit %d; stdout %q; stderr:\n%s", r.code, r.stdout.Bytes(), r.stderr.Bytes())
		return r.code
	case <-time.After(timeout):
		t.Fatalf("tether did not end within %s; stdout %q, stderr:\n%s", timeout, r.stdout.Bytes(), r.stderr.Bytes())
	}
	return 0
}

// kubectl returns the node's kubectl and runs it with the e2e kubeconfig.
func kubectl(t *testing.T, c *Cluster) func(ctx context.Context, args ...string) *exec.Cmd {
	t.Helper()
	bin := os.Getenv(KubectlEnv)
	if bin == "" {
		t.Fatalf("%s is not set: run the suite with `make e2e` (or set it to the kubectl of the node's Kubernetes build)", KubectlEnv)
	}
	return func(ctx context.Context, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
		return cmd
	}
}

// uncordonAtEnd makes the node schedulable again when the test ends,
// whatever happened.
func uncordonAtEnd(t *testing.T, c *Cluster) {
	kc := kubectl(t, c)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if out, err := kc(ctx, "uncordon", NodeName).CombinedOutput(); err != nil {
			t.Errorf("uncordon %s: %v\n%s", NodeName, err, out)
		}
	})
}

// drainJob runs `kubectl drain` of the node for the pods labelled
// sel (the test's job pod alone: other tests' pods stay), and returns
// when it started, its output and error on a channel.
type drainResult struct {
	out   string
	err   error
	ended time.Time
}

func drainJob(ctx context.Context, t *testing.T, c *Cluster, sel string, timeout time.Duration) <-chan drainResult {
	kc := kubectl(t, c)
	uncordonAtEnd(t, c)
	res := make(chan drainResult, 1)
	go func() {
		// --force: a job pod has no controller; --delete-emptydir-data:
		// it has emptyDirs. The Eviction API still honours its budget.
		out, err := kc(ctx, "drain", NodeName, "--pod-selector", sel, "--force", "--ignore-daemonsets",
			"--delete-emptydir-data", "--timeout", timeout.String()).CombinedOutput()
		res <- drainResult{string(out), err, time.Now()}
	}()
	return res
}

// TestKubeDisruptionDrainWaits: `kubectl drain` started while a protected
// job runs waits for it: the job finishes with its output exact and exit
// code 0, and only then does the drain complete.
func TestKubeDisruptionDrainWaits(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "drain")
	mark := "tether-e2e-drain=" + rand.String(6)
	paths := writeScripts(t, []string{"job.sh"}, map[string]string{
		"job.sh": "echo started; i=0; while [ $i -lt 8 ]; do sleep 1; i=$((i+1)); printf 'tick %d\\n' $i; done; printf 'done\\n'\n",
	})
	r := startJob(ctx, t, c, bin, "run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns,
		"--label", mark, "--quiet", paths[0])
	r.waitOutput(t, "started\n", 90*time.Second)
	pods, err := c.Client.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the job's PodDisruptionBudgets: %v %v; want one", pods, err)
	}
	// The budget guards the pod once the disruption controller counted it
	// healthy (Ready): an unready pod under a budget not yet counted is
	// evictable (the Eviction API's unhealthy-pod rule).
	c.WaitFor(ctx, t, "the job's budget counts its pod", func(ctx context.Context) (bool, error) {
		b, err := c.Client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, pods.Items[0].Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return b.Status.ObservedGeneration >= b.Generation && b.Status.CurrentHealthy >= 1, nil
	})
	drained := drainJob(ctx, t, c, mark, 120*time.Second)
	code := r.wait(t, 60*time.Second)
	want := "started\ntick 1\ntick 2\ntick 3\ntick 4\ntick 5\ntick 6\ntick 7\ntick 8\ndone\n"
	if code != 0 || string(r.stdout.Bytes()) != want {
		t.Fatalf("exit %d, output %q; want 0 and %q", code, r.stdout.Bytes(), want)
	}
	select {
	case d := <-drained:
		t.Logf("kubectl drain:\n%s", d.out)
		if d.err != nil {
			t.Fatalf("the drain failed: %v", d.err)
		}
		if d.ended.Before(r.ended) {
			t.Errorf("the drain completed at %s, before the job ended at %s", d.ended, r.ended)
		}
		if !strings.Contains(d.out, "disruption budget") {
			t.Errorf("the drain's output does not show it was held back by the budget")
		}
	case <-time.After(90 * time.Second):
		t.Fatal("the drain did not complete after the job ended")
	}
	waitNoJobLeft(ctx, t, c, ns, 60*time.Second)
}

// TestKubeDisruptionDrainUnprotected: with --no-disruption-protection the
// drain evicts the job's pod, and the job fails at once as a system
// failure saying so.
func TestKubeDisruptionDrainUnprotected(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "drainoff")
	mark := "tether-e2e-drain=" + rand.String(6)
	paths := writeScripts(t, []string{"job.sh"}, map[string]string{"job.sh": "echo started; sleep 120; echo never\n"})
	r := startJob(ctx, t, c, bin, "run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns,
		"--label", mark, "--no-disruption-protection", "--quiet", paths[0])
	r.waitOutput(t, "started\n", 90*time.Second)
	drained := drainJob(ctx, t, c, mark, 90*time.Second)
	start := time.Now()
	code := r.wait(t, 60*time.Second)
	if code == 0 || !strings.Contains(string(r.stderr.Bytes()), "evicted by the Eviction API (node drain)") {
		t.Errorf("exit %d; want a failure saying the pod was evicted by the Eviction API (node drain)", code)
	}
	if strings.Contains(string(r.stdout.Bytes()), "never") {
		t.Error("the script ran on")
	}
	t.Logf("the job ended %s after the drain started", time.Since(start).Round(time.Millisecond))
	if d := <-drained; d.err != nil {
		t.Errorf("the drain failed: %v\n%s", d.err, d.out)
	}
	waitNoJobLeft(ctx, t, c, ns, 90*time.Second)
}

// TestKubeEvictedEphemeralStorage: a job that writes more than its
// ephemeral-storage limit is evicted by the kubelet, and tether says so
// in the kubelet's words.
func TestKubeEvictedEphemeralStorage(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "ephemeral")
	paths := writeScripts(t, []string{"job.sh"}, map[string]string{
		// Over the limit in the container's writable layer and in an
		// emptyDir: the kubelet measures each on its own period.
		"job.sh": "echo writing; dd if=/dev/zero of=/tmp/fill bs=1M count=40 2>/dev/null; dd if=/dev/zero of=/scratch/fill bs=1M count=40 2>/dev/null; echo written; sleep 300; echo never\n",
	})
	res := runCLI(ctx, t, c, bin, "run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns,
		"--limits", "ephemeral-storage=16Mi", "--volume", "emptydir:/scratch", "--quiet", paths[0])
	t.Logf("exit %d; stdout %q; stderr:\n%s", res.code, res.stdout, res.stderr)
	if res.code == 0 || !strings.Contains(res.stderr, "evicted by the kubelet") || !strings.Contains(res.stderr, "ephemeral") {
		t.Errorf("exit %d; want a failure saying the kubelet evicted the pod for its ephemeral storage", res.code)
	}
	if strings.Contains(res.stdout, "never") {
		t.Error("the script ran on")
	}
	waitNoJobLeft(ctx, t, c, ns, 90*time.Second)
}

// TestKubeDisruptionPreemption: a pod of a higher priority that needs the
// job's CPU preempts the job's pod; tether names it and its priority.
func TestKubeDisruptionPreemption(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "preempt")
	node, err := c.Client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The job asks for most of what is left of the node's CPU; the
	// preemptor asks for as much, so both cannot fit.
	free := node.Status.Allocatable.Cpu().MilliValue() - requestedCPU(ctx, t, c)
	want := free * 3 / 4
	if want < 100 {
		t.Fatalf("the node has %dm CPU free; the test needs at least 134m", free)
	}
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-urgent"}, Value: 1000,
		Description: "tether e2e: preempts a job pod"}
	if _, err := c.Client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.SchedulingV1().PriorityClasses().Delete(context.Background(), pc.Name, metav1.DeleteOptions{})
	})
	paths := writeScripts(t, []string{"job.sh"}, map[string]string{"job.sh": "echo started; sleep 120; echo never\n"})
	r := startJob(ctx, t, c, bin, "run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns,
		"--requests", fmt.Sprintf("cpu=%dm", want), "--quiet", paths[0])
	r.waitOutput(t, "started\n", 90*time.Second)

	urgent := SimplePod(ns, "urgent", BusyboxImage, "sleep", "60")
	urgent.Spec.NodeName = ""
	urgent.Spec.PriorityClassName = pc.Name
	grace := int64(0)
	urgent.Spec.TerminationGracePeriodSeconds = &grace
	urgent.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(want, resource.DecimalSI)}
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, urgent, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	code := r.wait(t, 90*time.Second)
	wantMsg := fmt.Sprintf("preempted by pod %s/urgent, priority 1000", ns)
	if code == 0 || !strings.Contains(string(r.stderr.Bytes()), wantMsg) {
		t.Errorf("exit %d; want a failure saying %q", code, wantMsg)
	}
	c.WaitPodRunning(ctx, t, ns, "urgent")
}

// requestedCPU is the CPU the pods on the node request (millicores).
func requestedCPU(ctx context.Context, t *testing.T, c *Cluster) int64 {
	pods, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + NodeName})
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, ct := range p.Spec.Containers {
			sum += ct.Resources.Requests.Cpu().MilliValue()
		}
	}
	return sum
}

// waitNoJobLeft waits until ns holds no pod, ConfigMap, Secret or
// PodDisruptionBudget of Tether's.
func waitNoJobLeft(ctx context.Context, t testing.TB, c *Cluster, ns string, timeout time.Duration) {
	t.Helper()
	waitNoTetherObjects(ctx, t, c, ns, timeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c.WaitFor(ctx, t, "no Tether PodDisruptionBudgets in "+ns, func(ctx context.Context) (bool, error) {
		b, err := c.Client.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedByValue})
		return err == nil && len(b.Items) == 0, err
	})
}
