package kube

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/tether-ci/tether/client/kube/kubeapi"
)

// Bounds of an eventFeed's memory.
const (
	// recentEvents is how long an event is kept for pods that have no
	// subscriber yet: a job subscribes right after creating its pod, so
	// only the first events of a new pod can come before it.
	recentEvents = 2 * time.Minute
	// maxRecentEvents bounds the kept events however fast they come.
	maxRecentEvents = 2048
)

// eventFeed follows the events about pods in one namespace and hands each
// to deliver (the subscribers of its pod) as it arrives. Events are a
// stream, not state: it keeps only those of the last recentEvents (at most
// maxRecentEvents), slimmed, for a subscriber that arrives after its pod's
// first events — not the namespace's whole event history, which the API
// server keeps for an hour and a busy namespace fills with thousands. Its
// list (at the start, and again when a watch cannot resume) reads none of
// that history either: one event, for the resource version to watch from.
// The events before it are fetched per pod (pastEvents), only for the pods
// created before that list: the pod of a `tether run`, those of a
// runner's first jobs unless it called Watcher.Watch before creating them,
// and, after a list that restarts a broken watch, the pods waited for then
// (their events of the gap, see catchUp) and those created before it. An
// event is kept and delivered once (by UID and resource version), however
// many of these reads return it.
//
// It is the store of a client-go Reflector (cache.ReflectorStore), which
// lists, watches, and retries with backoff.
type eventFeed struct {
	client  kubeapi.Interface
	ns      string
	deliver func(*corev1.Event)
	now     func() time.Time
	// waiting returns the pods that jobs wait for (nil: none); set before
	// run.
	waiting func() []string

	synced   chan struct{} // closed at the first list
	syncOnce sync.Once

	mu     sync.Mutex
	listed time.Time                  // when the latest list's answer came; set before synced is closed
	byPod  map[string][]*corev1.Event // recent events by pod name, oldest first
	order  []arrival                  // every kept event, oldest first
	known  map[string]bool            // eventKey of every kept event
}

// arrival is when a kept event arrived, which pod it is about, and its
// eventKey.
type arrival struct {
	at       time.Time
	pod, key string
}

// eventKey identifies one state of an event: a repeat the API server
// counts into it is a new resource version.
func eventKey(e *corev1.Event) string {
	id := string(e.UID)
	if id == "" {
		id = e.Namespace + "/" + e.Name
	}
	return id + "@" + e.ResourceVersion
}

var _ cache.ReflectorStore = (*eventFeed)(nil)

func newEventFeed(cs kubeapi.Interface, ns string, deliver func(*corev1.Event)) *eventFeed {
	return &eventFeed{client: cs, ns: ns, deliver: deliver, now: time.Now,
		synced: make(chan struct{}), byPod: map[string][]*corev1.Event{}, known: map[string]bool{}}
}

// aboutPods selects the events about pods.
const aboutPods = "involvedObject.kind=Pod"

// run lists and watches until ctx ends.
func (f *eventFeed) run(ctx context.Context) {
	lw := &cache.ListWatch{
		ListWithContextFunc: f.list,
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = aboutPods
			return f.client.CoreV1().Events(f.ns).Watch(ctx, o)
		},
	}
	cache.NewReflectorWithOptions(lw, &corev1.Event{}, f, cache.ReflectorOptions{Name: "tether pod events in " + f.ns}).RunWithContext(ctx)
}

// list returns no events and the resource version to watch from: that of
// a one-event list of the events about pods (a consistent read). A list
// after the first restarts a watch that could not resume: the events
// since the watch broke are not watched, and those of the pods waited for
// are read for them first (catchUp).
func (f *eventFeed) list(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	o.FieldSelector = aboutPods
	o.ResourceVersion, o.ResourceVersionMatch = "", ""
	o.Limit, o.Continue = 1, ""
	page, err := f.client.CoreV1().Events(f.ns).List(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("list the events of namespace %s: %w", f.ns, err)
	}
	f.mu.Lock()
	again := !f.listed.IsZero()
	f.listed = time.Now() // the clock Pod.created reads
	f.mu.Unlock()
	if again {
		if err := f.catchUp(ctx); err != nil {
			return nil, err
		}
	}
	return &corev1.EventList{ListMeta: metav1.ListMeta{ResourceVersion: page.ResourceVersion}}, nil
}

// catchUp keeps and delivers the recent events of the pods waited for that
// it did not have: those the broken watch missed. (A pod waited for only
// from now on reads its events itself when it was created before this
// list, see Watcher.subscribe.)
func (f *eventFeed) catchUp(ctx context.Context) error {
	if f.waiting == nil {
		return nil
	}
	for _, name := range f.waiting() {
		evs, err := f.pastEvents(ctx, name)
		if err != nil {
			return fmt.Errorf("read the events the broken watch missed: %w", err)
		}
		for _, e := range evs {
			f.add(e)
		}
	}
	return nil
}

// pastEvents returns the recent events about pod name that are older than
// the feed's watch, slimmed.
func (f *eventFeed) pastEvents(ctx context.Context, name string) ([]*corev1.Event, error) {
	sel := fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.kind", "Pod"),
		fields.OneTermEqualSelector("involvedObject.name", name)).String()
	list, err := f.client.CoreV1().Events(f.ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list the events of pod %s/%s: %w", f.ns, name, err)
	}
	now := f.now()
	var out []*corev1.Event
	for i := range list.Items {
		if e := &list.Items[i]; e.InvolvedObject.Name == name && isRecent(e, now) {
			out = append(out, slimEvent(e))
		}
	}
	return out, nil
}

// isRecent reports whether e happened within recentEvents of now (an event
// without any time counts as recent).
func isRecent(e *corev1.Event, now time.Time) bool {
	t := eventTime(e)
	return t.IsZero() || now.Sub(t.Time) <= recentEvents
}

// listedAt returns when the latest list's answer came (zero before the
// first): the watch delivers every event from about then on.
func (f *eventFeed) listedAt() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.listed
}

// recent returns the kept events about pod name, oldest first.
func (f *eventFeed) recent(name string) []*corev1.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*corev1.Event(nil), f.byPod[name]...)
}

// hasSynced reports whether the first list arrived.
func (f *eventFeed) hasSynced() bool {
	select {
	case <-f.synced:
		return true
	default:
		return false
	}
}

// keep adds e to the kept events and drops those past their time; it
// reports false, keeping nothing, when e is kept already. f.mu is held.
func (f *eventFeed) keep(e *corev1.Event) bool {
	key := eventKey(e)
	if f.known[key] {
		return false
	}
	now := f.now()
	for len(f.order) > 0 && (len(f.order) >= maxRecentEvents || now.Sub(f.order[0].at) > recentEvents) {
		old := f.order[0]
		f.order = f.order[1:]
		delete(f.known, old.key)
		if evs := f.byPod[old.pod]; len(evs) > 1 {
			f.byPod[old.pod] = evs[1:]
		} else {
			delete(f.byPod, old.pod)
		}
	}
	pod := e.InvolvedObject.Name
	f.byPod[pod] = append(f.byPod[pod], e)
	f.order = append(f.order, arrival{at: now, pod: pod, key: key})
	f.known[key] = true
	return true
}

// seen keeps and delivers one event from the watch.
func (f *eventFeed) seen(obj any) error {
	if e, ok := obj.(*corev1.Event); ok {
		f.add(slimEvent(e))
	}
	return nil
}

// add keeps and delivers e, a slim event, unless it is kept already.
func (f *eventFeed) add(e *corev1.Event) {
	f.mu.Lock()
	fresh := f.keep(e)
	f.mu.Unlock()
	if fresh {
		f.deliver(e)
	}
}

// Add is a new event from the watch.
func (f *eventFeed) Add(obj any) error { return f.seen(obj) }

// Update is a changed event (a repeat counted) from the watch.
func (f *eventFeed) Update(obj any) error { return f.seen(obj) }

// Delete is an event the API server removed (they expire): nothing to do,
// kept events expire on their own.
func (f *eventFeed) Delete(any) error { return nil }

// Resync does nothing: the reflector has no resync period.
func (f *eventFeed) Resync() error { return nil }

// Replace is a list's result (no events, see list): what it carries is
// kept and delivered. The kept events stay: they are recent events still,
// and a list carries none of them.
func (f *eventFeed) Replace(list []any, _ string) error {
	for _, obj := range list {
		if err := f.seen(obj); err != nil {
			return err
		}
	}
	f.syncOnce.Do(func() { close(f.synced) })
	return nil
}
