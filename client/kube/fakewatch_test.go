package kube

import (
	"context"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	ktesting "k8s.io/client-go/testing"
)

// fakeWatches tells a test when a fake clientset's watches are in place.
//
// An API server's watch starts at the resource version of the list before
// it, so an informer misses nothing that changed in between. The fake's
// watch starts when it is registered and delivers only later changes: a
// change made after an informer's list but before its watch is registered
// never reaches the informer (on a loaded machine that gap lasts long
// enough to be hit). A test that changes watched objects waits for their
// watch first.
type fakeWatches struct {
	mu      sync.Mutex
	n       map[string]int // registered watches by resource
	changed chan struct{}  // closed and replaced at each registration
}

// trackWatches makes cs register its watches itself (as its default
// reactor does) and count them once they are registered. Reactors
// prepended later run first.
func trackWatches(cs *fake.Clientset) *fakeWatches {
	w := &fakeWatches{n: map[string]int{}, changed: make(chan struct{})}
	cs.PrependWatchReactor("*", func(a ktesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if wa, ok := a.(ktesting.WatchActionImpl); ok {
			opts = wa.ListOptions
		}
		wi, err := cs.Tracker().Watch(a.GetResource(), a.GetNamespace(), opts)
		if err != nil {
			return true, nil, err
		}
		w.mu.Lock()
		w.n[a.GetResource().Resource]++
		close(w.changed)
		w.changed = make(chan struct{})
		w.mu.Unlock()
		return true, wi, nil
	})
	return w
}

// await waits until at least n watches of each resource are registered,
// and reports false if ctx ends first.
func (w *fakeWatches) await(ctx context.Context, n int, resources ...string) bool {
	for {
		w.mu.Lock()
		ready, changed := true, w.changed
		for _, r := range resources {
			ready = ready && w.n[r] >= n
		}
		w.mu.Unlock()
		if ready {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

// wait is await that fails the test when ctx ends first.
func (w *fakeWatches) wait(ctx context.Context, t *testing.T, n int, resources ...string) {
	t.Helper()
	if !w.await(ctx, n, resources...) {
		t.Fatalf("the watches of %v were not registered: %v", resources, context.Cause(ctx))
	}
}
