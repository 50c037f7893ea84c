package poolctl

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/tether-ci/tether/internal/contract"
	"github.com/tether-ci/tether/internal/pool"
)

// fakeCluster is a fake clientset whose pods get a creation time, and
// that counts pod creates.
type fakeCluster struct {
	*fake.Clientset
	mu      sync.Mutex
	creates int
	refuse  bool
}

func newFakeCluster() *fakeCluster {
	f := &fakeCluster{Clientset: fake.NewClientset()}
	f.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.refuse {
			return true, nil, errQuota
		}
		f.creates++
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		p.CreationTimestamp = metav1.Now()
		p.UID = types.UID("uid-" + p.Name)
		return false, nil, nil
	})
	return f
}

type quotaError struct{}

func (quotaError) Error() string { return `pods "x" is forbidden: exceeded quota: pods` }

var errQuota = quotaError{}

func (f *fakeCluster) createCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.creates
}

// unclaimed lists the pool's pods that are not claimed.
func (f *fakeCluster) pods(t *testing.T, poolName string) (unclaimed, claimed []corev1.Pod) {
	t.Helper()
	list, err := f.CoreV1().Pods("ci").List(context.Background(), metav1.ListOptions{LabelSelector: contract.LabelPool + "=" + poolName})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		if p.Labels[contract.LabelWarm] == contract.WarmClaimed {
			claimed = append(claimed, p)
		} else {
			unclaimed = append(unclaimed, p)
		}
	}
	return unclaimed, claimed
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func testPool(name string, size int, memory string) pool.Pool {
	p := pool.Pool{Name: name, Size: size, MaxIdle: time.Hour, Image: "alpine:3", HelperImage: "example.org/shim:1"}
	p.Memory = memory
	return p
}

func startController(t *testing.T, f *fakeCluster, pools ...pool.Pool) (*Controller, *Metrics) {
	t.Helper()
	m := NewMetrics(nil)
	c, err := New(Options{Client: f, Namespace: "ci", Pools: pools, Identity: "test", Metrics: m,
		LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond,
		BackoffBase: 200 * time.Millisecond, BackoffMax: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return c, m
}

// The pool is filled to its size and no further; a claim is replaced; a
// settings change replaces the unclaimed pods and leaves the claimed one;
// a removed pool loses its unclaimed pods.
func TestControllerKeepsSize(t *testing.T) {
	f := newFakeCluster()
	c, _ := startController(t, f, testPool("a", 3, "64Mi"))
	waitUntil(t, "3 pods", func() bool { u, _ := f.pods(t, "a"); return len(u) == 3 })
	time.Sleep(300 * time.Millisecond)
	if n := f.createCount(); n != 3 {
		t.Fatalf("%d creates, want 3", n)
	}
	u, _ := f.pods(t, "a")
	for _, p := range u {
		if p.Labels[contract.LabelPoolHash] != c.pools.get("a").hash || p.Labels[contract.LabelWarm] != contract.WarmStarting {
			t.Errorf("pod %s labels %v", p.Name, p.Labels)
		}
	}
	claim := u[0].DeepCopy()
	claim.Labels[contract.LabelWarm] = contract.WarmClaimed
	if _, err := f.CoreV1().Pods("ci").Update(context.Background(), claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a replacement", func() bool { return f.createCount() == 4 })
	time.Sleep(300 * time.Millisecond)
	if u, cl := f.pods(t, "a"); len(u) != 3 || len(cl) != 1 {
		t.Fatalf("%d unclaimed, %d claimed; want 3 and 1", len(u), len(cl))
	}

	// New settings: the three unclaimed pods are replaced.
	m, err := configs("ci", []pool.Pool{testPool("a", 3, "96Mi")})
	if err != nil {
		t.Fatal(err)
	}
	c.pools.replace(m)
	waitUntil(t, "pods of the new settings", func() bool {
		u, _ := f.pods(t, "a")
		n := 0
		for _, p := range u {
			if p.Labels[contract.LabelPoolHash] == m["a"].hash {
				n++
			}
		}
		return n == 3 && len(u) == 3
	})
	if _, cl := f.pods(t, "a"); len(cl) != 1 || cl[0].Name != claim.Name {
		t.Errorf("the claimed pod was touched: %v", cl)
	}

	// The pool removed: its unclaimed pods go, the claimed one stays.
	m, _ = configs("ci", []pool.Pool{testPool("b", 1, "")})
	c.pools.replace(m)
	waitUntil(t, "pool a emptied", func() bool { u, _ := f.pods(t, "a"); return len(u) == 0 })
	if _, cl := f.pods(t, "a"); len(cl) != 1 {
		t.Errorf("%d claimed pods after the pool's removal, want 1", len(cl))
	}
	waitUntil(t, "pool b filled", func() bool { u, _ := f.pods(t, "b"); return len(u) == 1 })
}

// Creates refused: a Warning Event on the Lease and a back-off, not a
// loop; once creates work again the pool fills.
func TestControllerBacksOff(t *testing.T) {
	f := newFakeCluster()
	f.refuse = true
	_, m := startController(t, f, testPool("q", 2, ""))
	var ev corev1.Event
	waitUntil(t, "a FailedCreate Event", func() bool {
		list, _ := f.CoreV1().Events("ci").List(context.Background(), metav1.ListOptions{})
		for _, e := range list.Items {
			if e.Reason == ReasonFailedCreate && e.InvolvedObject.Kind == "Lease" {
				ev = e
				return true
			}
		}
		return false
	})
	if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Message, "exceeded quota") || ev.Annotations[contract.LabelPool] != "q" {
		t.Errorf("event %+v", ev)
	}
	time.Sleep(1500 * time.Millisecond)
	// 200ms, 400ms, 800ms, 1s: at most 5 tries in 1.5s.
	if n := testutilCount(m, "q"); n < 2 || n > 5 {
		t.Errorf("%v create failures in 1.5s: want a back-off", n)
	}
	f.mu.Lock()
	f.refuse = false
	f.mu.Unlock()
	waitUntil(t, "the pool filled after the back-off", func() bool { u, _ := f.pods(t, "q"); return len(u) == 2 })
}
