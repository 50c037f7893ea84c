//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
	"github.com/tether-ci/tether/protocol"
)

// createQuota creates a ResourceQuota and waits until the quota controller
// has computed its usage (until then admission rejects everything it
// covers with "status unknown", which would hide what the test checks).
func createQuota(ctx context.Context, t *testing.T, c *Cluster, ns string, hard corev1.ResourceList) {
	t.Helper()
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "tight", Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
	}
	if _, err := c.Client.CoreV1().ResourceQuotas(ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	c.WaitFor(wctx, t, "quota usage computed", func(ctx context.Context) (bool, error) {
		got, err := c.Client.CoreV1().ResourceQuotas(ns).Get(ctx, "tight", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(got.Status.Hard) == len(hard) && len(got.Status.Used) == len(hard), nil
	})
}

// TestKubeQuotaRejectsPodLeavesNothing: a ResourceQuota rejects the pod;
// `tether run` fails clearly and leaves no ConfigMap or Secret.
func TestKubeQuotaRejectsPodLeavesNothing(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "quota")
	createQuota(ctx, t, c, ns, corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")})
	paths := writeScripts(t, []string{"job.sh"}, map[string]string{"job.sh": "echo hi\n"})
	res := runCLI(ctx, t, c, bin, "run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns,
		"--env", "SECRET=x", paths[0])
	t.Logf("stderr:\n%s", res.stderr)
	if res.code != 125 {
		t.Fatalf("exit code %d, want 125", res.code)
	}
	if !strings.Contains(res.stderr, "exceeded quota") {
		t.Fatalf("stderr does not explain the quota rejection")
	}
	if p, cm, s := tetherObjects(ctx, t, c, ns); p+cm+s != 0 {
		t.Fatalf("left behind: %d pods, %d ConfigMaps, %d Secrets", p, cm, s)
	}
}

// TestKubeQuotaRejectsConfigMapDeletesPod: the pod is admitted but its
// ConfigMap is not; `tether run` deletes the pod and creates no Secret.
func TestKubeQuotaRejectsConfigMapDeletesPod(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "cmquota")
	// kube-root-ca.crt already uses the one ConfigMap allowed.
	createQuota(ctx, t, c, ns, corev1.ResourceList{"count/configmaps": resource.MustParse("1")})
	paths := writeScripts(t, []string{"job.sh"}, map[string]string{"job.sh": "echo hi\n"})
	res := runCLI(ctx, t, c, bin, "run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns,
		"--env", "SECRET=x", paths[0])
	t.Logf("stderr:\n%s", res.stderr)
	if res.code != 125 || !strings.Contains(res.stderr, "exceeded quota") {
		t.Fatalf("exit code %d; want 125 and the quota error", res.code)
	}
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}

// TestKubeOwnedObjectsGarbageCollected deletes a job's pod the way a person
// or another tool would; its ConfigMap and Secret go with it.
func TestKubeOwnedObjectsGarbageCollected(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "ownergc")
	spec := kubeSpec(ns, BusyboxImage, "echo hi\n")
	spec.Env = map[string]string{"TOKEN": "x"}
	objs, err := kube.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	pod, err := kube.Create(ctx, clientset.Wrap(c.Client), objs, kubeLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{objs.ConfigMap.Name, objs.Secret.Name} {
		var refs []metav1.OwnerReference
		if cm, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			refs = cm.OwnerReferences
		} else if s, err := c.Client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			refs = s.OwnerReferences
		} else {
			t.Fatalf("%s was not created: %v", name, err)
		}
		if len(refs) != 1 || refs[0].UID != pod.UID() {
			t.Fatalf("%s ownerReferences %+v; want the pod (uid %s)", name, refs, pod.UID())
		}
	}
	if err := c.Client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNoTetherObjects(ctx, t, c, ns, 90*time.Second)
}

// TestKubeDeadline: a job past its timeout is stopped by the shim, which
// says so in band (final record, reason deadline); the pod ends Failed.
func TestKubeDeadline(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "deadline")
	spec := kubeSpec(ns, BusyboxImage, "echo begin\nsleep 300\necho never\n")
	spec.Timeout = 4 * time.Second
	spec.ShimArgs = []string{"--grace=1s"}
	pod, objs := startPod(ctx, t, c, spec)
	out := &safeBuffer{}
	start := time.Now()
	res, err := client.Run(ctx, pod.Transport(c.Config, kube.TransportOptions{Logger: kubeLogger(t)}), objs.Job,
		client.Options{Output: out, Logger: kubeLogger(t), ExitShim: true})
	if !errors.Is(err, client.ErrShimExited) {
		t.Fatalf("Run: %v; want an error wrapping ErrShimExited", err)
	}
	if res.Exit == nil || res.Exit.Reason != protocol.ReasonDeadline || res.ExitCode != 124 {
		t.Fatalf("final record %+v, exit code %d; want reason %q and 124", res.Exit, res.ExitCode, protocol.ReasonDeadline)
	}
	if took := time.Since(start); took > 60*time.Second {
		t.Fatalf("the deadline took %v to stop a 4 s job", took)
	}
	if string(out.Bytes()) != "begin\n" {
		t.Fatalf("output %q", out.Bytes())
	}
	got := c.WaitPodPhase(ctx, t, ns, pod.Name, corev1.PodFailed, 60*time.Second)
	for _, st := range got.Status.ContainerStatuses {
		if st.Name == kube.BuildContainer && (st.State.Terminated == nil || st.State.Terminated.ExitCode != 124) {
			t.Fatalf("build container state %+v; want terminated with 124", st.State)
		}
	}
}

// TestKubeIdleTimeout: nobody attaches, so the shim ends itself at its idle
// timeout (final record reason idle, exit 125) and the pod terminates.
func TestKubeIdleTimeout(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "idle")
	spec := kubeSpec(ns, BusyboxImage, "echo hi\n")
	spec.IdleTimeout = 3 * time.Second
	pod, _ := startPod(ctx, t, c, spec)
	got := c.WaitPodPhase(ctx, t, ns, pod.Name, corev1.PodFailed, 90*time.Second)
	for _, st := range got.Status.ContainerStatuses {
		if st.Name == kube.BuildContainer && (st.State.Terminated == nil || st.State.Terminated.ExitCode != 125) {
			t.Fatalf("build container state %+v; want terminated with 125 (idle)", st.State)
		}
	}
	raw, err := c.Client.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{Container: kube.BuildContainer}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The container log holds the shim's records (stdout) and its
	// diagnostics (stderr): the last record must be the final one.
	var last string
	for _, line := range strings.Split(string(raw), "\n") {
		if _, _, err := protocol.Parse([]byte(line+"\n"), nil); err == nil {
			last = line
		}
	}
	if !strings.HasPrefix(last, "x ") || !strings.Contains(last, `"reason":"idle"`) {
		t.Fatalf("last record in the log %q; want the final record with reason idle\nlog:\n%s", last, raw)
	}
}

// TestKubeImagePullFailsFast: an image that cannot be pulled ends the wait
// with a clear error, and nothing is left behind.
func TestKubeImagePullFailsFast(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "pull")
	paths := writeScripts(t, []string{"job.sh"}, map[string]string{"job.sh": "echo hi\n"})
	start := time.Now()
	res := runCLI(ctx, t, c, bin, "run", "--image", "localhost/tether/does-not-exist:dev", "--helper-image", HelperImage,
		"-n", ns, paths[0])
	t.Logf("stderr (%v):\n%s", time.Since(start), res.stderr)
	if res.code != 125 || !strings.Contains(res.stderr, "cannot be pulled") {
		t.Fatalf("exit code %d; want 125 and an image pull error", res.code)
	}
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}

// TestKubeInterruptCancelsAndCleansUp sends SIGINT to `tether run` during a
// long script: the script is stopped, the after-script runs, tether exits
// non-zero and deletes the pod.
func TestKubeInterruptCancelsAndCleansUp(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "sigint")
	paths := writeScripts(t, []string{"long.sh", "after.sh"}, map[string]string{
		"long.sh":  "echo started\nsleep 300\necho never\n",
		"after.sh": "echo after-script ran\n",
	})
	run := exec.Command(bin, "run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns, paths[0], "--after", paths[1])
	run.Env = append(run.Environ(), "KUBECONFIG="+c.Kubeconfig)
	out := &safeBuffer{}
	var stderr bytes.Buffer
	run.Stdout, run.Stderr = out, &stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !bytes.Contains(out.Bytes(), []byte("started\n")) {
		if time.Now().After(deadline) {
			_ = run.Process.Kill()
			_ = run.Wait()
			t.Fatalf("no output in time; stderr:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	sent := time.Now()
	if err := run.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- run.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(90 * time.Second):
		_ = run.Process.Kill()
		t.Fatalf("tether run did not end within 90s of SIGINT; stderr:\n%s", stderr.String())
	}
	t.Logf("ended %v after SIGINT; stderr:\n%s", time.Since(sent), stderr.String())
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("tether run after SIGINT: %v; want a non-zero exit", err)
	}
	if got := string(out.Bytes()); got != "started\nafter-script ran\n" {
		t.Fatalf("output %q; want the first line and the after-script's", got)
	}
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}

// TestKubeWaitFailsClearly: a pod that cannot be scheduled, and a helper
// image without tether-shim, end the wait with an error saying so.
func TestKubeWaitFailsClearly(t *testing.T) {
	c := NewCluster(t)
	for _, tc := range []struct {
		name    string
		mutate  func(*kube.Spec)
		wantErr string
	}{
		{"unschedulable", func(s *kube.Spec) { s.NodeSelector = map[string]string{"tether.dev/no-such-node": "x"} },
			"stayed unschedulable for 3s"},
		{"init container fails", func(s *kube.Spec) { s.HelperImage = BusyboxImage },
			"init container tether-init of pod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			ns := c.NewNamespace(t, "waitfail")
			spec := kubeSpec(ns, BusyboxImage, "echo hi\n")
			tc.mutate(&spec)
			objs, err := kube.Build(spec)
			if err != nil {
				t.Fatal(err)
			}
			pod, err := kube.Create(ctx, clientset.Wrap(c.Client), objs, kubeLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = pod.Delete(context.WithoutCancel(ctx)) }()
			start := time.Now()
			err = pod.WaitRunning(ctx, kube.WaitOptions{ScheduleTimeout: 3 * time.Second, Timeout: 2 * time.Minute})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("WaitRunning: %v; want an error containing %q", err, tc.wantErr)
			}
			t.Logf("after %v: %v", time.Since(start), err)
		})
	}
}
