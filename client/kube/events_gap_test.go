package kube

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	ktesting "k8s.io/client-go/testing"

	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
)

// controlledEventWatches makes every event watch of cs one the test drives
// (nothing the fake stores reaches it) and hands each to the returned
// channel as it starts.
func controlledEventWatches(cs *fake.Clientset) <-chan *watch.FakeWatcher {
	watches := make(chan *watch.FakeWatcher, 8)
	cs.PrependWatchReactor("events", func(ktesting.Action) (bool, watch.Interface, error) {
		w := watch.NewFake()
		watches <- w
		return true, w, nil
	})
	return watches
}

// breakWatch ends w as an API server ends a watch that cannot resume (the
// resource version it would resume from is compacted away): the reflector
// lists again.
func breakWatch(w *watch.FakeWatcher) {
	w.Error(&metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone,
		Reason: metav1.StatusReasonExpired, Message: "too old resource version"})
}

// The event watch breaks and cannot resume while a job waits for its pod,
// and the build container's Started event falls in the gap before the
// watch is listed again: the wait still sees it (its pod's status never
// says Running here, so only the event can end the wait).
func TestWaitRunningSeesEventsOfTheRelistGap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := fakeCluster()
	watches := controlledEventWatches(cs)
	wt := NewWatcher(clientset.Wrap(cs))
	defer wt.Close()
	if err := wt.Watch(ctx, "ci"); err != nil {
		t.Fatal(err)
	}
	first := <-watches
	_, p := createPodIn(ctx, t, cs)
	p.Watcher = wt
	done := make(chan error, 1)
	go func() { done <- p.WaitRunning(ctx, WaitOptions{Timeout: 15 * time.Second}) }()
	waitFor(t, "the job's subscription", func() bool { return len(wt.namespace("ci").waitingFor()) == 1 })

	if _, err := cs.CoreV1().Events("ci").Create(ctx, startedEvent(p, "gap.1", "spec.containers{"+BuildContainer+"}"),
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	breakWatch(first)
	if err := <-done; err != nil {
		t.Fatalf("WaitRunning: %v; want it to see the Started event of the gap", err)
	}
}

// After a relist the feed reads the events of the pods waited for and
// delivers those it had not: an event the watch delivered before it broke
// is not delivered again, one of the gap is, and a pod nobody waits for
// costs no read.
func TestEventFeedCatchesUpAfterARelist(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := time.Now()
	ev := func(name, pod, reason, rv string) *corev1.Event {
		e := podEvent(name, pod, reason, now)
		e.UID, e.ResourceVersion = types.UID("uid-"+name), rv
		return e
	}
	cs := fake.NewClientset()
	watches := controlledEventWatches(cs)
	var got delivered
	f := newEventFeed(clientset.Wrap(cs), "ci", got.add)
	f.waiting = func() []string { return []string{"p"} }
	go f.run(ctx)
	waitFor(t, "the feed's first list", f.hasSynced)
	first := <-watches

	scheduled := ev("p.1", "p", "Scheduled", "10")
	first.Add(scheduled)
	waitFor(t, "the watched event", func() bool { return len(got.all()) == 1 })
	for _, e := range []*corev1.Event{scheduled, ev("p.2", "p", "Pulled", "11"), ev("q.1", "q", "Scheduled", "12")} {
		if _, err := cs.CoreV1().Events("ci").Create(ctx, e, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	breakWatch(first)
	second := <-watches
	// The Pulled event counted again: a new resource version, delivered.
	second.Modify(ev("p.2", "p", "Pulled", "13"))
	waitFor(t, "the repeat", func() bool { return len(got.all()) >= 3 })
	if d := fmt.Sprint(got.all()); d != "[p/Scheduled p/Pulled p/Pulled]" {
		t.Fatalf("delivered %s; want p's Scheduled once, its Pulled of the gap and the repeat, nothing of q", d)
	}
	if n := len(f.recent("p")); n != 3 {
		t.Fatalf("kept %d events of p; want 3", n)
	}
}
