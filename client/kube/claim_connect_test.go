package kube_test

import (
	"context"
	"errors"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
	"github.com/tether-ci/tether/internal/testing/attachserver"
	"github.com/tether-ci/tether/internal/testing/syncbuf"
)

// warmShims starts a shim for each named warm pod and returns the
// clientset holding the pods (idle, running, the pool's settings).
func warmShims(t *testing.T, names ...string) (*env, []*attachserver.Container, []runtime.Object) {
	t.Helper()
	e := newEnv(t, attachserver.Options{})
	var shims []*attachserver.Container
	var objs []runtime.Object
	for _, n := range names {
		shims = append(shims, e.shim(t, n))
		p := kube.WarmRunning(t, kube.PoolSpec(), "small", time.Now().Add(-time.Minute))
		p.Name = n
		objs = append(objs, p)
	}
	return e, shims, objs
}

// withREST is a fake clientset whose CoreV1().RESTClient() is a real
// one's, so that a Transport built on it makes its attach URLs for the
// attach server while its pods are the fake's.
type withREST struct {
	*fake.Clientset
	rest kubernetes.Interface
}

func (c withREST) CoreV1() corev1client.CoreV1Interface {
	return coreREST{c.Clientset.CoreV1(), c.rest.CoreV1().RESTClient()}
}

type coreREST struct {
	corev1client.CoreV1Interface
	rc rest.Interface
}

func (c coreREST) RESTClient() rest.Interface { return c.rc }

// attachable returns fc with the attach URLs of e's server.
func attachable(t *testing.T, e *env, fc *fake.Clientset) withREST {
	t.Helper()
	real, err := kubernetes.NewForConfig(e.srv.RESTConfig(""))
	if err != nil {
		t.Fatal(err)
	}
	return withREST{fc, real}
}

// With Connect, Claim attaches while it claims: the job runs over that
// session (one attach in all), and a pod another job claimed first is
// left with no job (its session closed, nothing written to it). The
// budget is created in the background; Protected waits for it.
func TestClaimConnectAttachesWhileClaiming(t *testing.T) {
	ctx := t.Context()
	e, shims, objs := warmShims(t, "warm-a", "warm-b")
	fc := kube.CASClientset(objs...)
	cs := attachable(t, e, fc)
	// The first pod Claim tries was claimed by another job just before:
	// its update is a Conflict.
	var updates atomic.Int32
	var lost atomic.Value
	fc.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if updates.Add(1) > 1 {
			return false, nil, nil
		}
		name := a.(k8stesting.UpdateAction).GetObject().(*corev1.Pod).Name
		lost.Store(name)
		// The claim's attach to the pod is established before the
		// Conflict comes.
		c := shims[0]
		if name == "warm-b" {
			c = shims[1]
		}
		for deadline := time.Now().Add(5 * time.Second); c.Attached() == 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		return true, nil, apierrors.NewConflict(corev1.Resource("pods"), name, errors.New("claimed by another job"))
	})
	cfg := e.srv.RESTConfig("")
	opts := kube.TransportOptions{Logger: testLogger(t), ConnectTimeout: 5 * time.Second, AttachFirst: true}
	spec := kube.PoolSpec()
	spec.Scripts = []kube.Script{{Name: "job.sh", Content: []byte("echo unused\n")}}
	// No garbage collection meanwhile: it would close a connection
	// nobody refers to any more, and hide one Claim failed to close.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	pod, err := kube.Claim(ctx, clientset.Wrap(cs), kube.ClaimRequest{Pool: "small", Spec: spec, Logger: testLogger(t),
		Connect: &kube.ClaimConnect{Config: cfg, Options: opts}})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Name == lost.Load() {
		t.Fatalf("claimed %s, whose update was a Conflict", pod.Name)
	}
	won, other := shims[0], shims[1]
	if pod.Name == "warm-b" {
		won, other = other, won
	}
	// The claim's session to the lost pod is closed at once (the attach
	// was done with before the Conflict came).
	for deadline := time.Now().Add(300 * time.Millisecond); other.Attached() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the claim's session to the lost pod is still open")
		}
	}
	if err := pod.Protected(ctx); err != nil {
		t.Fatalf("Protected: %v", err)
	}
	pdbs, _ := cs.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
	if len(pdbs.Items) != 1 || pdbs.Items[0].Name != pod.Name {
		t.Fatalf("budgets %v after Protected, want the claimed pod's", pdbs.Items)
	}
	// The job itself: a script of this machine (the shims run here).
	job := client.Job{Scripts: []string{e.script(t, "job.sh", "echo \"hello from $0\"\n")}}
	out := &syncbuf.Buffer{}
	res, err := kube.Run(ctx, pod.Transport(cfg, opts), job, client.Options{Output: out, Logger: testLogger(t), ExitShim: true})
	if err != nil || res.ExitCode != 0 || !strings.HasPrefix(out.String(), "hello from ") {
		t.Fatalf("job: exit %d, err %v, output %q", res.ExitCode, err, out.String())
	}
	if n := won.Attaches(); n != 1 {
		t.Errorf("the claimed pod's shim served %d attach sessions, want 1 (the claim's)", n)
	}
	// The lost pod's shim got the claim's session and nothing over it: it
	// still waits for a job.
	if n := other.Attaches(); n != 1 {
		t.Errorf("the lost pod's shim served %d attach sessions, want the claim's 1", n)
	}
	if !other.Running() || strings.Contains(other.Stderr(), "job") {
		t.Errorf("the lost pod's shim (running %v) heard of a job:\n%s", other.Running(), other.Stderr())
	}
	if err := pod.Delete(ctx); err != nil {
		t.Fatal(err)
	}
}

// A claimed pod deleted before the claim's attach reached it: the first
// Connect fails with ErrShimGone (the pod is read once the attach failed),
// so the caller may start the job elsewhere; nothing hangs.
func TestClaimConnectPodGone(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	e := newEnv(t, attachserver.Options{})
	p := kube.WarmRunning(t, kube.PoolSpec(), "small", time.Now().Add(-time.Minute))
	p.Name = "warm-gone" // no container behind it: the attach fails
	fc := kube.CASClientset(p)
	cs := attachable(t, e, fc)
	fc.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		// Claimed, then deleted at once (a drain, an impatient user).
		_ = fc.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), ns, p.Name)
		return true, a.(k8stesting.UpdateAction).GetObject(), nil
	})
	cfg := e.srv.RESTConfig("")
	opts := kube.TransportOptions{Logger: testLogger(t), ConnectTimeout: 5 * time.Second, AttachFirst: true}
	spec := kube.PoolSpec()
	spec.Scripts = []kube.Script{{Name: "job.sh", Content: []byte("echo unused\n")}}
	pod, err := kube.Claim(ctx, clientset.Wrap(cs), kube.ClaimRequest{Pool: "small", Spec: spec, Connect: &kube.ClaimConnect{Config: cfg, Options: opts}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = pod.Transport(cfg, opts).Connect(ctx)
	if !errors.Is(err, client.ErrShimGone) {
		t.Fatalf("Connect to a claimed pod that is gone: %v, want ErrShimGone", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Connect hung")
	}
}
