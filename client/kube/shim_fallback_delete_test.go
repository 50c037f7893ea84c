package kube

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	ktesting "k8s.io/client-go/testing"

	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
)

// enforceUIDPreconditions makes cs answer a pod delete whose UID
// precondition does not match the stored pod as an API server does: 409
// Conflict, nothing deleted.
func enforceUIDPreconditions(cs *fake.Clientset) {
	cs.PrependReactor("delete", "pods", func(a ktesting.Action) (bool, runtime.Object, error) {
		d := a.(ktesting.DeleteActionImpl)
		pre := d.DeleteOptions.Preconditions
		if pre == nil || pre.UID == nil {
			return false, nil, nil
		}
		obj, err := cs.Tracker().Get(d.GetResource(), d.GetNamespace(), d.GetName())
		if err != nil {
			return false, nil, nil
		}
		if uid := obj.(*corev1.Pod).UID; uid != *pre.UID {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, d.GetName(),
				fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", *pre.UID, uid))
		}
		return false, nil, nil
	})
}

// hookedClientset runs hooks around pod creates and gets, outside the
// fake's lock (its reactors hold it, so they cannot call the clientset).
type hookedClientset struct {
	*fake.Clientset
	// createPod, if set, runs for every pod create but dry runs; create
	// sends it to the fake.
	createPod func(pod *corev1.Pod, create func() (*corev1.Pod, error)) (*corev1.Pod, error)
	// gotPod, if set, sees every pod get's outcome.
	gotPod func(err error)
}

func (c *hookedClientset) CoreV1() typedcorev1.CoreV1Interface {
	return hookedCore{c.Clientset.CoreV1(), c}
}

type hookedCore struct {
	typedcorev1.CoreV1Interface
	c *hookedClientset
}

func (h hookedCore) Pods(ns string) typedcorev1.PodInterface {
	return hookedPods{h.CoreV1Interface.Pods(ns), h.c}
}

type hookedPods struct {
	typedcorev1.PodInterface
	c *hookedClientset
}

func (h hookedPods) Create(ctx context.Context, pod *corev1.Pod, opts metav1.CreateOptions) (*corev1.Pod, error) {
	if len(opts.DryRun) > 0 || h.c.createPod == nil {
		return h.PodInterface.Create(ctx, pod, opts)
	}
	return h.c.createPod(pod, func() (*corev1.Pod, error) { return h.PodInterface.Create(ctx, pod, opts) })
}

func (h hookedPods) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Pod, error) {
	pod, err := h.PodInterface.Get(ctx, name, opts)
	if h.c.gotPod != nil {
		h.c.gotPod(err)
	}
	return pod, err
}

// fallbackCluster is fakeKubelet's cluster with UID preconditions enforced,
// behind hooks, and the objects of a job whose shim comes from an image.
func fallbackCluster(ctx context.Context, t *testing.T) (*hookedClientset, *Objects) {
	t.Helper()
	fc, gc, _ := fakeKubelet(ctx)
	t.Cleanup(gc.Wait)
	enforceUIDPreconditions(fc)
	spec := imageSpec()
	spec.Helper, spec.Services = nil, nil
	objs, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	return &hookedClientset{Clientset: fc}, objs
}

// assertNoPod fails unless no pod of p's name exists.
func assertNoPod(ctx context.Context, t *testing.T, cs *hookedClientset, p *Pod) {
	t.Helper()
	got, err := cs.Clientset.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("after Delete the pod of the job's name is still there (UID %v, Pod.UID %s): %v", got.GetUID(), p.UID(), err)
	}
}

// The user's Ctrl-C cancels WaitRunning just as the replacement's create
// reached the API server, whose answer is lost: WaitRunning never learns
// the new pod's UID, and the cleanup's delete, under the old UID, meets
// the new pod. Delete must remove it.
func TestDeleteReachesAReplacementWhoseCreateAnswerWasLost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, objs := fallbackCluster(ctx, t)
	wctx, ctrlC := context.WithCancel(ctx)
	defer ctrlC()
	cs.createPod = func(pod *corev1.Pod, create func() (*corev1.Pod, error)) (*corev1.Pod, error) {
		if _, image := shimImage(pod); image {
			return create()
		}
		_, err := create()
		ctrlC()
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("post pod %s: %w", pod.Name, context.Canceled)
	}
	p, err := Create(ctx, clientset.Wrap(cs), objs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitRunning(wctx, WaitOptions{Timeout: 20 * time.Second}); err == nil {
		t.Fatal("WaitRunning succeeded; want it cancelled")
	}
	if err := p.Delete(ctx); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	assertNoPod(ctx, t, cs, p)
}

// A signal handler deletes the pod on another goroutine while WaitRunning
// has sent the replacement's create: Delete waits for the create's answer
// and deletes the new pod, and WaitRunning does not go on with it.
func TestDeleteDuringTheReplacementsCreate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, objs := fallbackCluster(ctx, t)
	var p *Pod
	deleted := make(chan error, 1)
	cs.createPod = func(pod *corev1.Pod, create func() (*corev1.Pod, error)) (*corev1.Pod, error) {
		if _, image := shimImage(pod); !image {
			go func() { deleted <- p.Delete(ctx) }()
			// Give a Delete that does not wait for the create the time to
			// finish first (a Delete that waits is correct either way).
			select {
			case err := <-deleted:
				deleted <- err
			case <-time.After(500 * time.Millisecond):
			}
		}
		return create()
	}
	p, err := Create(ctx, clientset.Wrap(cs), objs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitRunning(ctx, WaitOptions{Timeout: 20 * time.Second}); err == nil {
		t.Error("WaitRunning succeeded with a pod deleted meanwhile")
	}
	if err := <-deleted; err != nil {
		t.Fatalf("Delete: %v", err)
	}
	assertNoPod(ctx, t, cs, p)
}

// A signal handler deletes the pod while WaitRunning waits for the old pod
// to go: no replacement is created.
func TestDeleteBeforeTheReplacementsCreate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, objs := fallbackCluster(ctx, t)
	var p *Pod
	var once sync.Once
	cs.gotPod = func(err error) {
		if apierrors.IsNotFound(err) { // the old pod is gone
			once.Do(func() {
				if err := p.Delete(ctx); err != nil {
					t.Errorf("Delete: %v", err)
				}
			})
		}
	}
	p, err := Create(ctx, clientset.Wrap(cs), objs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitRunning(ctx, WaitOptions{Timeout: 20 * time.Second}); err == nil {
		t.Error("WaitRunning succeeded with a pod deleted meanwhile")
	}
	assertNoPod(ctx, t, cs, p)
}

// A pod of the job's name with another UID that is not this job's (another
// job's, created after this job's pod was gone) is left alone: this job's
// pod is gone. Whose it is unknown (a Pod not made by Create), the conflict
// is an error.
func TestDeleteLeavesAnotherJobsPodOfTheSameName(t *testing.T) {
	ctx := context.Background()
	cs := fakeCluster()
	enforceUIDPreconditions(cs)
	_, p := createPodIn(ctx, t, cs)
	if err := cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: "uid-other",
		Labels: map[string]string{LabelManagedBy: ManagedByValue, LabelJob: "another-job"}}}
	if _, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	unknown := &Pod{Client: clientset.Wrap(cs), Namespace: p.Namespace, Name: p.Name, uid: p.UID()}
	if err := unknown.Delete(ctx); !apierrors.IsConflict(err) {
		t.Errorf("Delete of a Pod whose job is unknown: %v; want the conflict", err)
	}
	if err := p.Delete(ctx); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if got, err := cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{}); err != nil || got.UID != "uid-other" {
		t.Fatalf("the other job's pod after Delete: %v, %v; want it left alone", got, err)
	}
}
