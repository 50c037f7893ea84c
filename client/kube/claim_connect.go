package kube

import (
	"context"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube/kubeapi"
)

// ClaimConnect tells Claim that the caller runs the claimed pod's job from
// this process at once (Pod.Transport, then Run), so that Claim overlaps
// what the job's start waits for with the claim itself (see
// ClaimRequest.Connect).
type ClaimConnect struct {
	// Config reaches the API server, as for Pod.Transport. Required.
	Config *rest.Config
	// Options are the attach session's options, as for Pod.Transport
	// (Protocol, ConnectTimeout and Logger matter here).
	Options TransportOptions
}

// pendingAttach is an attach session Claim opened to a pod while its
// update made the pod the job's: the first Connect of the pod's Transport
// takes it. No byte is written to it before that Connect.
type pendingAttach struct {
	cancel  context.CancelFunc
	done    chan struct{} // closed once conn or err is set
	started chan struct{} // closed once conn carried the job's first output (jobStartConn)
	conn    client.Conn
	err     error
	once    sync.Once // abandon
}

// afterStartWait bounds how long the requests a claimed pod's job makes
// beside it (its budget's create, its disruption watch) wait for the
// job's first output (jobStartConn): until then the API server connects
// the attach to the kubelet and the runtime and the shim starts the
// job's first script, and on a small node every request beside them
// delays the job's first output.
const afterStartWait = time.Second

// startAttach opens an attach session through t in the background.
func startAttach(ctx context.Context, t *Transport, cs kubeapi.Interface) *pendingAttach {
	ctx, cancel := context.WithCancel(ctx)
	pa := &pendingAttach{cancel: cancel, done: make(chan struct{}), started: make(chan struct{})}
	go func() {
		defer close(pa.done)
		conn, err := t.attach(ctx, cs)
		if conn != nil {
			conn = &jobStartConn{Conn: conn, started: pa.started}
		}
		pa.conn, pa.err = conn, err
	}()
	return pa
}

// wait returns the session once it is established, or why it is not.
// When ctx ends first the session is abandoned.
func (pa *pendingAttach) wait(ctx context.Context) (client.Conn, error) {
	select {
	case <-pa.done:
		pa.cancel()
		return pa.conn, pa.err
	case <-ctx.Done():
		pa.abandon()
		return nil, context.Cause(ctx)
	}
}

// abandon ends the session (now, or once its attach returns): its pod was
// not claimed, or the job will not use it.
func (pa *pendingAttach) abandon() {
	if pa == nil {
		return
	}
	pa.once.Do(func() {
		pa.cancel()
		go func() {
			<-pa.done
			if pa.conn != nil {
				_ = pa.conn.Close()
			}
		}()
	})
}

// protection is the PodDisruptionBudget's create that Claim started for a
// claimed pod (ClaimRequest.Connect): it runs while the job starts.
type protection struct {
	done chan struct{} // closed once err is set
	err  error
}

// startProtect creates pod's budget (Protect) in the background once the
// job's first output arrived (or after afterStartWait); a
// failure is logged as ProtectionWarning, as for a pod that Create
// protects. The pod was evictable while it waited in its pool: a budget
// that follows the job's start by a few milliseconds loses nothing.
func startProtect(ctx context.Context, cs kubeapi.Interface, pod *corev1.Pod, after <-chan struct{}, log *slog.Logger) *protection {
	pr := &protection{done: make(chan struct{})}
	go func() {
		defer close(pr.done)
		waitStarted(after)
		if pr.err = Protect(context.WithoutCancel(ctx), cs, pod); pr.err != nil {
			ProtectionWarning(log, pod, pr.err)
		}
	}()
	return pr
}

// Protected waits until the pod's PodDisruptionBudget, whose create Claim
// started in the background (ClaimRequest.Connect), exists, and returns
// the create's error (also logged as a warning in the Pod's Logger). It
// returns nil at once for a pod Claim protected before it returned, or
// that is not protected (Spec.NoDisruptionProtection), and ctx's cause
// when ctx ends first. Delete waits for the create itself, so that the
// budget never outlives the pod; a caller that keeps the pod calls
// Protected before it exits.
func (p *Pod) Protected(ctx context.Context) error {
	p.mu.Lock()
	pr := p.protecting
	p.mu.Unlock()
	if pr == nil {
		return nil
	}
	select {
	case <-pr.done:
		return pr.err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// waitStarted waits until started is closed (nil: at once), at most
// afterStartWait.
func waitStarted(started <-chan struct{}) {
	if started == nil {
		return
	}
	t := time.NewTimer(afterStartWait)
	defer t.Stop()
	select {
	case <-started:
	case <-t.C:
	}
}

// takeAttach returns the attach session Claim opened to the pod, once.
func (p *Pod) takeAttach() *pendingAttach {
	p.mu.Lock()
	defer p.mu.Unlock()
	pa := p.attaching
	p.attaching = nil
	return pa
}
