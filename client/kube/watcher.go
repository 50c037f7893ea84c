package kube

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/tether-ci/tether/client/kube/kubeapi"
)

// Watcher follows Tether's pods and their events for every job of a
// process: one pod informer (pods labelled LabelManagedBy=ManagedByValue)
// and one event watch (events about pods) per namespace, however many
// jobs wait at once, instead of a watch of each kind per job. Its caches
// hold slim copies (what WaitRunning reads), and of the events only the
// last minutes', not the namespace's history (see eventFeed). A runner
// creates one Watcher for its clientset and sets it as Pod.Watcher on the
// pods it creates; a pod without one (the `tether run` path) gets a
// Watcher of its own for its WaitRunning, which is the same code with one
// subscriber.
//
// The informers of a namespace start with its first subscriber and run
// until Close, so jobs that come one after another reuse them too. A
// failed list or watch is retried by client-go's
// reflector with exponential backoff (up to 30 s between tries), never in a
// tight loop. A Watcher is safe for concurrent use.
//
// It also remembers, for the transports of its pods (Pod.Transport),
// whether the API server returns a container log's stdout alone, so only
// the first job whose log is read finds out.
type Watcher struct {
	client     kubeapi.Interface
	logStreams logStreams

	mu sync.Mutex
	ns map[string]*nsWatch
}

// NewWatcher returns a Watcher that lists and watches through cs.
func NewWatcher(cs kubeapi.Interface) *Watcher {
	return &Watcher{client: cs, ns: map[string]*nsWatch{}}
}

// Close stops every informer. Waits still subscribed see no more changes
// (they end at their timeout); a later subscriber starts new informers.
func (w *Watcher) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ns, nw := range w.ns {
		nw.stop()
		delete(w.ns, ns)
	}
}

// nsWatch is one namespace's informers and the jobs subscribed to them.
type nsWatch struct {
	ns     string
	pods   cache.SharedIndexInformer
	events *eventFeed
	stop   context.CancelFunc

	mu   sync.Mutex
	subs map[string]map[*podSub]struct{} // by pod name
}

// podSub is one job's view of its pod: the latest state and the events not
// yet taken, with a wake-up channel. Memory stays bounded: one pod object
// and the events that arrived since the last take.
type podSub struct {
	nw     *nsWatch
	name   string
	uid    types.UID // "" matches any
	notify chan struct{}
	synced chan struct{} // closed once the pod cache and the event feed have synced

	mu     sync.Mutex
	pod    *corev1.Pod
	gone   bool
	events []*corev1.Event
}

func (s *podSub) wake() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

func (s *podSub) setPod(p *corev1.Pod) {
	if s.uid != "" && p.UID != s.uid {
		return // a pod of the same name that is not ours
	}
	s.mu.Lock()
	s.pod = p
	s.mu.Unlock()
	s.wake()
}

func (s *podSub) setGone(p *corev1.Pod) {
	if s.uid != "" && p != nil && p.UID != s.uid {
		return
	}
	s.mu.Lock()
	s.gone = true
	s.mu.Unlock()
	s.wake()
}

func (s *podSub) addEvent(e *corev1.Event) {
	if s.uid != "" && e.InvolvedObject.UID != "" && e.InvolvedObject.UID != s.uid {
		return
	}
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
	s.wake()
}

// take returns the latest pod (nil when none arrived yet), whether it was
// deleted, and the events that arrived since the last take.
func (s *podSub) take() (*corev1.Pod, bool, []*corev1.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	evs := s.events
	s.events = nil
	return s.pod, s.gone, evs
}

// Watch starts following namespace ns, unless it is followed already, and
// returns once its caches have synced (or ctx ended). Every event of a pod
// created afterwards reaches WaitRunning through the shared event watch, so
// a runner calls it before it creates its first pods in a namespace: a
// pod created before the watch started costs its wait one list of the
// pod's earlier events.
func (w *Watcher) Watch(ctx context.Context, ns string) error {
	nw := w.namespace(ns)
	if !cache.WaitForCacheSync(ctx.Done(), nw.pods.HasSynced, nw.events.hasSynced) {
		return fmt.Errorf("watch the pods and events of namespace %s: %w", ns, context.Cause(ctx))
	}
	return nil
}

// namespace returns namespace ns's informers, started if they were not.
func (w *Watcher) namespace(ns string) *nsWatch {
	w.mu.Lock()
	defer w.mu.Unlock()
	nw := w.ns[ns]
	if nw == nil {
		nw = w.start(ns)
		w.ns[ns] = nw
	}
	return nw
}

// subscribe follows the pod ns/name (uid, if not empty) until release is
// called. created is when the pod's create was sent (zero: unknown): a
// pod created before the event feed's first list may have events the
// feed's watch never sees, which are then listed once for it.
func (w *Watcher) subscribe(ns, name string, uid types.UID, created time.Time) (sub *podSub, release func()) {
	nw := w.namespace(ns)
	sub = &podSub{nw: nw, name: name, uid: uid, notify: make(chan struct{}, 1), synced: make(chan struct{})}

	nw.mu.Lock()
	if nw.subs[name] == nil {
		nw.subs[name] = map[*podSub]struct{}{}
	}
	nw.subs[name][sub] = struct{}{}
	// What the caches hold already (the informers may have run for other
	// jobs); later changes come through the handlers.
	if obj, ok, _ := nw.pods.GetStore().GetByKey(ns + "/" + name); ok {
		if p, isPod := obj.(*corev1.Pod); isPod {
			sub.setPod(p)
		}
	}
	for _, e := range nw.events.recent(name) {
		sub.addEvent(e)
	}
	nw.mu.Unlock()

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		if !cache.WaitForCacheSync(ctx.Done(), nw.pods.HasSynced, nw.events.hasSynced) {
			return
		}
		if created.IsZero() || created.Before(nw.events.listedAt()) {
			// The feed watches from its latest list: the pod's events
			// from before it are listed (they repeat nothing for the
			// subscriber, which ignores repeats).
			if evs, err := nw.events.pastEvents(ctx, name); err == nil {
				for _, e := range evs {
					sub.addEvent(e)
				}
			}
		}
		close(sub.synced)
	}()
	var once sync.Once
	return sub, func() {
		once.Do(func() {
			cancel()
			nw.mu.Lock()
			delete(nw.subs[name], sub)
			if len(nw.subs[name]) == 0 {
				delete(nw.subs, name)
			}
			nw.mu.Unlock()
		})
	}
}

// start builds and runs namespace ns's informers. w.mu is held.
func (w *Watcher) start(ns string) *nsWatch {
	managed := labels.Set{LabelManagedBy: ManagedByValue}.AsSelector().String()
	nw := &nsWatch{
		ns:   ns,
		pods: newPodInformer(w.client, ns, managed),
		subs: map[string]map[*podSub]struct{}{},
	}
	nw.events = newEventFeed(w.client, ns, nw.eventSeen)
	nw.events.waiting = nw.waitingFor
	_ = nw.pods.SetTransform(slimPodTransform)
	_, _ = nw.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { nw.podChanged(obj) },
		UpdateFunc: func(_, obj any) { nw.podChanged(obj) },
		DeleteFunc: nw.podDeleted,
	})
	ctx, cancel := context.WithCancel(context.Background())
	nw.stop = cancel
	go nw.pods.RunWithContext(ctx)
	go nw.events.run(ctx)
	return nw
}

func (nw *nsWatch) each(name string, fn func(*podSub)) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	for s := range nw.subs[name] {
		fn(s)
	}
}

func (nw *nsWatch) podChanged(obj any) {
	if p, ok := obj.(*corev1.Pod); ok {
		nw.each(p.Name, func(s *podSub) { s.setPod(p) })
	}
}

func (nw *nsWatch) podDeleted(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if p, ok := obj.(*corev1.Pod); ok {
		nw.each(p.Name, func(s *podSub) { s.setGone(p) })
	}
}

// waitingFor returns the names of the pods subscribed to.
func (nw *nsWatch) waitingFor() []string {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	names := make([]string, 0, len(nw.subs))
	for name := range nw.subs {
		names = append(names, name)
	}
	return names
}

func (nw *nsWatch) eventSeen(e *corev1.Event) {
	nw.each(e.InvolvedObject.Name, func(s *podSub) { s.addEvent(e) })
}

// cached reports whether the pod informer's cache holds the pod (the
// subscriber may not have been told yet).
func (s *podSub) cached() bool {
	obj, ok, _ := s.nw.pods.GetStore().GetByKey(s.nw.ns + "/" + s.name)
	p, isPod := obj.(*corev1.Pod)
	return ok && isPod && (s.uid == "" || p.UID == s.uid)
}
