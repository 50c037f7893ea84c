package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tether-ci/tether/client"
)

// disruptionSettle is how long Run waits, after a job ended without a
// result or with its script killed by SIGTERM, for the pod's status to say
// whether Kubernetes disrupted it: the kubelet posts an eviction only after
// it stopped the pod's containers.
const disruptionSettle = 10 * time.Second

// exitSIGTERM is the exit code of a script SIGTERM ended (128+15), as the
// kubelet's stop of an evicted pod's containers ends it.
const exitSIGTERM = 143

// firstReadWait bounds how long a failed Connect waits for a watch it
// started to read the pod first.
const firstReadWait = 5 * time.Second

// Run runs job through t as client.Run does and, when t is a Kubernetes
// Transport, watches the job's pod meanwhile for involuntary disruptions
// (the kubelet's evictions, preemption, the Eviction API, the taint
// manager, the loss of the pod's node). On one the job ends at once with a
// *DisruptedError saying what Kubernetes did, on one line: a lost node
// ends it once the node lifecycle controller marks the node not ready
// (its node monitor grace period, 50 s by default), not after the
// session's reconnect timeout. A job that finished with its result is not
// changed unless its script was killed by SIGTERM while its pod was being
// disrupted. A transport that embeds a *Transport (a wrapper around its
// Connect) is watched as that Transport. With the Transport's
// Options.LazyDisruptionWatch the watch starts only once an attach failed,
// or the job ended as an eviction ends it; for a pod Claim attached to
// (ClaimRequest.Connect) it starts once that attach is done with.
func Run(ctx context.Context, t client.Transport, job client.Job, opts client.Options) (client.Result, error) {
	kw, ok := t.(kubeTransport)
	if !ok {
		return client.Run(ctx, t, job, opts)
	}
	kt := kw.kubeTransport()
	cs, err := kt.clientset()
	if err != nil {
		return client.Result{}, err
	}
	w := newDisruptionWatch(cs, kt.Namespace, kt.Pod, kt.logger())
	defer w.end()
	if !kt.Options.LazyDisruptionWatch && kt.pending.Load() == nil {
		w.begin()
	}
	kt.disruptions.Store(w)
	defer kt.disruptions.Store(nil)
	res, err := client.Run(ctx, t, job, opts)
	return res, explain(ctx, w, res, err)
}

// explain returns the error of a job run while w watched its pod: the
// disruption w saw (waiting up to disruptionSettle for one when the job
// ended as an eviction ends it), else err.
func explain(ctx context.Context, w *disruptionWatch, res client.Result, err error) error {
	if d := (*DisruptedError)(nil); errors.As(err, &d) {
		return d
	}
	if d := w.disrupted(); d != nil {
		return d
	}
	if ctx.Err() != nil || res.Cancelled || err == nil && res.ExitCode != exitSIGTERM {
		return err
	}
	w.begin() // a lazy watch starts now, if no attach failed before
	if d := w.settle(ctx, disruptionSettle); d != nil {
		return d
	}
	return err
}

// connectWatched is Connect while Run watches the pod: a disruption seen
// ends the session's reconnects at once, and the connections it makes are
// closed when one is seen.
func (t *Transport) connectWatched(ctx context.Context, w *disruptionWatch) (client.Conn, error) {
	if d := w.disrupted(); d != nil {
		return nil, d
	}
	w.connecting()
	c, err := t.connect(ctx)
	if !t.Options.LazyDisruptionWatch {
		// A claimed pod's watch starts once the attach its claim opened
		// carried the job's first output (at most afterStartWait after
		// it is done with), so that its requests are not in the way of
		// the job's start (for any other pod it began with Run).
		if js, ok := c.(*jobStartConn); ok {
			go func() {
				waitStarted(js.started)
				w.begin()
			}()
		} else {
			w.begin()
		}
	}
	if err != nil {
		// A lazy watch starts with the first failed attach, and its
		// first read of the pod is waited for: a disruption that broke
		// the connection ends the session now.
		w.begin()
		w.awaitRead(ctx, firstReadWait)
		if !errors.Is(err, client.ErrShimGone) {
			w.setUnreachable(true)
			w.checkNode(ctx)
		}
		if d := w.disrupted(); d != nil {
			return nil, d
		}
		return nil, err
	}
	return w.track(c), nil
}

// errDisrupted is OpenLog's error once the pod was disrupted: its log is
// not read (its node may be gone).
func errDisrupted(d *DisruptedError) error {
	return fmt.Errorf("%w: %w", d, errors.ErrUnsupported)
}

// kubeTransport is a *Transport, or a type that embeds one.
type kubeTransport interface{ kubeTransport() *Transport }

func (t *Transport) kubeTransport() *Transport { return t }
