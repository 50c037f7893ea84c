package poolctl

import (
	"context"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"

	"github.com/tether-ci/tether/client/kube"
)

// missCount is the misses metric of pool and reason.
func missCount(m *Metrics, pool, reason string) float64 {
	var out dto.Metric
	if err := m.Misses.WithLabelValues(pool, reason).Write(&out); err != nil {
		return -1
	}
	return out.GetCounter().GetValue()
}

// The leader counts the claimers' miss Events by pool and reason, those
// since it leads only (an earlier leader counted the older ones).
func TestControllerCountsMisses(t *testing.T) {
	f := newFakeCluster()
	ctx := context.Background()
	event := func(name string, m *kube.MissError, at time.Time) {
		e := kube.MissEvent("ci", m, at)
		e.GenerateName, e.Name = "", name
		if _, err := f.CoreV1().Events("ci").Create(ctx, e, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	event("old", &kube.MissError{Pool: "a", Reason: kube.MissEmpty}, time.Now().Add(-time.Hour))
	// The fake clientset's watch sees only what is created after it
	// started (an API server's resumes from the list's resourceVersion).
	watching := make(chan struct{})
	var once sync.Once
	f.PrependWatchReactor("events", func(k8stesting.Action) (bool, watch.Interface, error) {
		once.Do(func() { close(watching) })
		return false, nil, nil
	})
	_, m := startController(t, f, testPool("a", 1, ""))
	select {
	case <-watching:
	case <-time.After(10 * time.Second):
		t.Fatal("the leader never watched the miss Events")
	}
	time.Sleep(100 * time.Millisecond)
	event("new-1", &kube.MissError{Pool: "a", Reason: kube.MissEmpty}, time.Now())
	event("new-2", &kube.MissError{Pool: "a", Reason: kube.MissSettings}, time.Now())
	event("new-3", &kube.MissError{Pool: "a", Reason: kube.MissEmpty}, time.Now())
	waitUntil(t, "3 misses counted", func() bool {
		return missCount(m, "a", "empty") == 2 && missCount(m, "a", "settings") == 1
	})
	time.Sleep(200 * time.Millisecond)
	if n := missCount(m, "a", "empty"); n != 2 {
		t.Errorf("%v empty misses, want 2 (the Event from before the lead is not counted)", n)
	}
}
