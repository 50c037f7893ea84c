package kube

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube/kubeapi"
)

// How long the search for a preemptor looks for the scheduler's Preempted
// event, which may come a moment after the pod's DisruptionTarget
// condition.
const (
	preemptorSearch = 3 * time.Second
	preemptorPoll   = 300 * time.Millisecond
	// nodeCheckEvery is how often the pod's node is read while the
	// session cannot reach its shim; nodeCheckGap is the least time
	// between two reads.
	nodeCheckEvery = 3 * time.Second
	nodeCheckGap   = time.Second
)

// disruptionWatch follows one job's pod while its job runs (Run) and
// notices involuntary disruptions: it watches the pod alone (one read,
// then one watch request), and reads the pod's node when the node
// lifecycle controller marks the pod not ready and, every nodeCheckEvery,
// while the session cannot reach the shim (watchNode). The node is read
// on its own because the pod may show nothing: the node lifecycle
// controller only turns a pod's Ready condition False, which changes
// nothing on a pod that was not ready yet (its kubelet had not posted
// that its containers run when it stopped). On a disruption the watch
// records a DisruptedError and closes the transport's connections, so
// the session's next Connect returns the error at once instead of
// retrying until its reconnect timeout.
type disruptionWatch struct {
	cs       kubeapi.Interface
	ns, name string
	log      *slog.Logger

	mu   sync.Mutex
	err  *DisruptedError
	last *corev1.Pod
	// nodeChecked is when checkNode last read the node.
	nodeChecked time.Time
	// connects counts the session's Connects; unreachable is true from a
	// Connect that follows a lost connection, or a failed one, until a
	// connection delivers data.
	connects    int
	unreachable bool
	conns       map[client.Conn]struct{}
	found       chan struct{} // closed once err is set
	wake        chan struct{} // watchNode's nudge when the shim became unreachable
	// nodeEvery and nodeGap are nodeCheckEvery and nodeCheckGap (shorter
	// in tests).
	nodeEvery, nodeGap time.Duration

	// The watch's own goroutines (begin, end): their context, started
	// once, ended (closed when they returned, or by end when they never
	// began).
	ctx     context.Context
	cancel  context.CancelFunc
	started sync.Once
	ended   chan struct{}
	// read is closed once run read the pod first (or gave up).
	read     chan struct{}
	readOnce sync.Once
}

func newDisruptionWatch(cs kubeapi.Interface, ns, name string, log *slog.Logger) *disruptionWatch {
	ctx, cancel := context.WithCancel(context.Background())
	return &disruptionWatch{cs: cs, ns: ns, name: name, log: log, conns: map[client.Conn]struct{}{},
		found: make(chan struct{}), wake: make(chan struct{}, 1), nodeEvery: nodeCheckEvery, nodeGap: nodeCheckGap,
		ctx: ctx, cancel: cancel, ended: make(chan struct{}), read: make(chan struct{})}
}

// begin starts watching the pod (run) and, while the session cannot
// reach the shim, its node (watchNode) in the background until end, once:
// later calls do nothing.
func (w *disruptionWatch) begin() {
	w.started.Do(func() {
		var wg sync.WaitGroup
		wg.Go(func() { w.run(w.ctx) })
		wg.Go(func() { w.watchNode(w.ctx) })
		go func() {
			wg.Wait()
			close(w.ended)
		}()
	})
}

// end stops the watch, if it began, and waits for it to return.
func (w *disruptionWatch) end() {
	w.cancel()
	w.started.Do(func() { close(w.ended) })
	<-w.ended
}

// awaitRead waits up to d for the watch to have read the pod once.
func (w *disruptionWatch) awaitRead(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.read:
	case <-t.C:
	case <-ctx.Done():
	}
}

// readDone records that the pod was read once (or will not be).
func (w *disruptionWatch) readDone() { w.readOnce.Do(func() { close(w.read) }) }

// disrupted returns the disruption seen (nil: none).
func (w *disruptionWatch) disrupted() *DisruptedError {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// track registers c to be closed on a disruption; untrack is called once c
// is closed by its user.
func (w *disruptionWatch) track(c client.Conn) client.Conn {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		_ = c.Close()
		return c
	}
	w.conns[c] = struct{}{}
	return &trackedConn{Conn: c, w: w}
}

// connecting notes that the session calls Connect: every call after the
// first means its connection was lost. An attach the API server upgraded
// may still fail at once (the API server reports on the stream that it
// cannot reach the kubelet), so a Connect that returns a connection does
// not mean the shim is reachable: that is known once the connection
// delivers data.
//
// A lazy watch (TransportOptions.LazyDisruptionWatch) begins here with
// the first reconnect: a WebSocket reattach to a lost node is upgraded
// before it fails, so no failed Connect would begin it.
func (w *disruptionWatch) connecting() {
	w.mu.Lock()
	w.connects++
	lost := w.connects > 1
	w.mu.Unlock()
	if lost {
		w.begin()
		w.setUnreachable(true)
	}
}

// setUnreachable records whether the session can reach the shim; it
// nudges watchNode when it cannot.
func (w *disruptionWatch) setUnreachable(on bool) {
	w.mu.Lock()
	w.unreachable = on
	w.mu.Unlock()
	if on {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// watchNode reads the pod's node every nodeEvery while the session cannot
// reach the shim, until ctx ends or a disruption was seen.
func (w *disruptionWatch) watchNode(ctx context.Context) {
	t := time.NewTicker(w.nodeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.found:
			return
		case <-w.wake:
		case <-t.C:
		}
		w.mu.Lock()
		unreachable := w.unreachable
		w.mu.Unlock()
		if unreachable {
			w.checkNode(ctx)
		}
	}
}

// trackedConn forgets itself when closed, and tells the watch once it
// delivered data (the shim is reachable).
type trackedConn struct {
	client.Conn
	w         *disruptionWatch
	delivered atomic.Bool
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.delivered.Load() {
		c.delivered.Store(true)
		c.w.setUnreachable(false)
	}
	return n, err
}

func (c *trackedConn) Close() error {
	c.w.mu.Lock()
	delete(c.w.conns, c.Conn)
	c.w.mu.Unlock()
	return c.Conn.Close()
}

// set records e (the first disruption wins) and closes every connection.
func (w *disruptionWatch) set(e *DisruptedError) {
	w.mu.Lock()
	if w.err != nil {
		w.mu.Unlock()
		return
	}
	w.err = e
	conns := w.conns
	w.conns = map[client.Conn]struct{}{}
	close(w.found)
	w.mu.Unlock()
	w.log.Warn("the job's pod was disrupted", "pod", w.ns+"/"+w.name, "reason", e.Reason, "message", e.Message)
	for c := range conns {
		_ = c.Close()
	}
}

// run watches the pod until ctx ends, the pod is gone, or a disruption
// was seen. A watch that ends is made again from the last version seen
// (a failed one after a backoff, up to 30 s).
func (w *disruptionWatch) run(ctx context.Context) {
	defer w.readDone()
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.2, Steps: 6, Cap: 30 * time.Second}
	rv := ""
	for ctx.Err() == nil {
		done, err := w.watchFrom(ctx, &rv)
		if done {
			return
		}
		if err == nil {
			backoff.Duration = time.Second
			continue
		}
		w.log.Debug("watching the job's pod for disruptions", "pod", w.ns+"/"+w.name, "err", err)
		t := time.NewTimer(backoff.Step())
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// watchFrom watches the pod from version *rv, keeping *rv up to date;
// done is true when there is nothing more to watch for. With no version
// (*rv == "") the pod is read first and watched from the version read: an
// API server with the WatchList feature (on by default since Kubernetes
// 1.32) makes a watch from no version a watch-list request, which it
// refuses with an error event when its etcd cannot report watch progress,
// so such a watch would never see the pod change.
func (w *disruptionWatch) watchFrom(ctx context.Context, rv *string) (done bool, err error) {
	if *rv == "" {
		p, err := w.cs.CoreV1().Pods(w.ns).Get(ctx, w.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return true, nil
		case err != nil:
			w.readDone()
			return false, err
		}
		*rv = p.ResourceVersion
		seen := w.see(ctx, p)
		w.readDone()
		if seen {
			return true, nil
		}
	}
	wi, err := w.cs.CoreV1().Pods(w.ns).Watch(ctx, metav1.ListOptions{
		FieldSelector:       fields.OneTermEqualSelector("metadata.name", w.name).String(),
		ResourceVersion:     *rv,
		AllowWatchBookmarks: true,
	})
	if err != nil {
		return false, err
	}
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return true, nil
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return false, nil
			}
			switch ev.Type {
			case watch.Error:
				if apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) || apierrors.IsGone(apierrors.FromObject(ev.Object)) {
					*rv = "" // too old: start from the current state
				}
				return false, apierrors.FromObject(ev.Object)
			case watch.Deleted:
				return true, nil
			case watch.Bookmark, watch.Added, watch.Modified:
				p, isPod := ev.Object.(*corev1.Pod)
				if !isPod {
					continue
				}
				*rv = p.ResourceVersion
				if ev.Type != watch.Bookmark && w.see(ctx, p) {
					return true, nil
				}
			}
		}
	}
}

// checkNode reads the node of the pod (as last seen), at most every
// nodeGap: a node the node lifecycle controller marked NotReady is a
// disruption even when the pod's own Ready condition did not change (it
// was not True before).
func (w *disruptionWatch) checkNode(ctx context.Context) {
	w.mu.Lock()
	pod := w.last
	due := time.Since(w.nodeChecked) >= w.nodeGap
	if due {
		w.nodeChecked = time.Now()
	}
	w.mu.Unlock()
	if pod == nil || pod.Spec.NodeName == "" || !due || w.disrupted() != nil {
		return
	}
	node, err := w.cs.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		w.log.Debug("reading the job pod's node", "node", pod.Spec.NodeName, "err", err)
		return // no permission, or the API server is unreachable too
	}
	if e := nodeDisruption(w.ns, w.name, node); e != nil {
		w.set(e)
	}
}

// see assesses a state of the pod; it reports whether a disruption was
// found.
func (w *disruptionWatch) see(ctx context.Context, pod *corev1.Pod) bool {
	w.mu.Lock()
	w.last = pod
	w.mu.Unlock()
	if e := podDisruption(pod); e != nil {
		if e.Reason == corev1.PodReasonPreemptionByScheduler {
			w.addPreemptor(ctx, e)
		}
		w.set(e)
		return true
	}
	if nodeLossSuspected(pod) {
		node, err := w.cs.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
		switch {
		case err == nil:
			if e := nodeDisruption(w.ns, w.name, node); e != nil {
				w.set(e)
				return true
			}
		case apierrors.IsForbidden(err):
			// The pod's identity may not read nodes: the node
			// controller's mark is all there is to go by.
			w.set(&DisruptedError{Namespace: w.ns, Pod: w.name, Reason: ReasonNodeNotReady,
				Message: fmt.Sprintf("lost its node: node %s is not ready (the node controller marked the pod not ready)", pod.Spec.NodeName)})
			return true
		default:
			w.log.Debug("reading the job pod's node", "node", pod.Spec.NodeName, "err", err)
		}
	}
	return false
}

// addPreemptor names the pod that preempted e's pod, and its priority,
// from the scheduler's Preempted event (its related object), when that
// event can be read.
func (w *disruptionWatch) addPreemptor(ctx context.Context, e *DisruptedError) {
	ctx, cancel := context.WithTimeout(ctx, preemptorSearch)
	defer cancel()
	sel := fields.Set{"involvedObject.name": w.name, "reason": "Preempted"}.AsSelector().String()
	_ = wait.PollUntilContextCancel(ctx, preemptorPoll, true, func(ctx context.Context) (bool, error) {
		evs, err := w.cs.CoreV1().Events(w.ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return apierrors.IsForbidden(err), nil
		}
		for _, ev := range evs.Items {
			if r := ev.Related; r != nil && r.Name != "" {
				e.Message = "preempted by pod " + r.Namespace + "/" + r.Name + w.priority(ctx, r.Namespace, r.Name)
				return true, nil
			}
		}
		return false, nil
	})
}

// priority returns ", priority N" for pod ns/name, "" when it cannot be
// read.
func (w *disruptionWatch) priority(ctx context.Context, ns, name string) string {
	p, err := w.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || p.Spec.Priority == nil {
		return ""
	}
	return fmt.Sprintf(", priority %d", *p.Spec.Priority)
}

// settle waits up to d for a disruption to be seen, and returns it (nil:
// none within d).
func (w *disruptionWatch) settle(ctx context.Context, d time.Duration) *DisruptedError {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.found:
	case <-t.C:
	case <-ctx.Done():
	}
	return w.disrupted()
}
