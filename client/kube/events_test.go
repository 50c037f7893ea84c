package kube

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
)

// delivered collects what an eventFeed delivers.
type delivered struct {
	mu  sync.Mutex
	evs []string
}

func (d *delivered) add(e *corev1.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.evs = append(d.evs, e.InvolvedObject.Name+"/"+e.Reason)
}

func (d *delivered) all() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.evs...)
}

func podEvent(name, pod, reason string, at time.Time) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: "ci", CreationTimestamp: metav1.Time{Time: at}},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ci", Name: pod},
		Type:           corev1.EventTypeNormal, Reason: reason, LastTimestamp: metav1.Time{Time: at},
	}
}

// The feed's list keeps none of the namespace's event history (it only
// learns where to watch from); its watch delivers each new event to the
// subscribers' callback and keeps it for later subscribers; pastEvents
// returns one pod's recent events from before, slimmed.
func TestEventFeedWatchesFromNow(t *testing.T) {
	now := time.Now()
	cs := fake.NewClientset(
		podEvent("old.1", "old-pod", "Scheduled", now.Add(-time.Hour)),
		podEvent("old.2", "p", "Pulled", now.Add(-recentEvents-time.Minute)),
		podEvent("new.1", "p", "Scheduled", now.Add(-10*time.Second)),
		podEvent("new.2", "q", "Scheduled", now.Add(-10*time.Second)),
	)
	watches := trackWatches(cs)
	var got delivered
	f := newEventFeed(clientset.Wrap(cs), "ci", got.add)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go f.run(ctx)
	waitFor(t, "the feed's first list", f.hasSynced)
	watches.wait(ctx, t, 1, "events")
	if evs := f.recent("p"); len(evs) != 0 {
		t.Fatalf("kept events from before the feed: %v", reasons(evs))
	}
	past, err := f.pastEvents(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if len(past) != 1 || past[0].Reason != "Scheduled" || past[0].InvolvedObject.Name != "p" || len(past[0].ManagedFields) != 0 {
		t.Fatalf("past events of p: %v; want only its recent Scheduled", reasons(past))
	}
	if _, err := cs.CoreV1().Events("ci").Create(ctx, podEvent("new.3", "p", "Started", now), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The feed keeps an event, then delivers it.
	waitFor(t, "the watched event", func() bool { return len(f.recent("p")) == 1 && len(got.all()) > 0 })
	if d := got.all(); fmt.Sprint(d) != "[p/Started]" {
		t.Errorf("delivered %v, want [p/Started]", d)
	}
}

// Kept events expire after recentEvents, and no more than maxRecentEvents
// are kept however fast they come.
func TestEventFeedBoundsWhatItKeeps(t *testing.T) {
	now := time.Unix(1700000000, 0)
	f := newEventFeed(clientset.Wrap(fake.NewClientset()), "ci", func(*corev1.Event) {})
	f.now = func() time.Time { return now }
	for i := range 3 {
		if err := f.Add(podEvent(fmt.Sprint("a.", i), "a", "Pulling", now)); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(recentEvents + time.Second)
	if err := f.Add(podEvent("b.1", "b", "Scheduled", now)); err != nil {
		t.Fatal(err)
	}
	if evs := f.recent("a"); len(evs) != 0 {
		t.Fatalf("events older than %s kept: %v", recentEvents, reasons(evs))
	}
	for i := range 2 * maxRecentEvents {
		if err := f.Update(podEvent(fmt.Sprint("c.", i), fmt.Sprint("c", i%7), "Pulling", now)); err != nil {
			t.Fatal(err)
		}
	}
	f.mu.Lock()
	kept, pods := len(f.order), 0
	for _, evs := range f.byPod {
		pods += len(evs)
	}
	f.mu.Unlock()
	if kept > maxRecentEvents || pods != kept {
		t.Fatalf("kept %d events (%d by pod), want at most %d", kept, pods, maxRecentEvents)
	}
}

func reasons(evs []*corev1.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Reason)
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
