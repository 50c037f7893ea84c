package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
)

// ErrGoneUnreached ends the session of a claimed warm pod that was gone
// before the job reached it: no byte of the job reached the shim, so the
// job may start afresh on another pod.
var ErrGoneUnreached = errors.New("the warm pod was gone before the job reached it")

// FirstConnect is a pod's transport that remembers whether any connection
// to the shim was made: before one, the job cannot have reached the
// shim, so a job whose claimed warm pod vanished may start afresh on a
// cold pod. Embedding keeps the transport's other methods (client.LogSource's,
// and what kube.Run watches the pod with).
type FirstConnect struct {
	*kube.Transport
	// Gone, when set, ends the session (cancels the context the job runs
	// under, with a cause wrapping ErrGoneUnreached) when the pod is gone
	// before any connection: no log to read, no disruption to wait for.
	Gone context.CancelCauseFunc

	reached atomic.Bool
}

// Reached reports whether a connection to the shim was made.
func (t *FirstConnect) Reached() bool { return t.reached.Load() }

// Connect connects through the pod's transport.
func (t *FirstConnect) Connect(ctx context.Context) (client.Conn, error) {
	c, err := t.Transport.Connect(ctx)
	switch {
	case err == nil:
		t.reached.Store(true)
	case errors.Is(err, client.ErrShimGone) && !t.reached.Load() && t.Gone != nil:
		t.Gone(fmt.Errorf("%w: %w", ErrGoneUnreached, err))
	}
	return c, err
}
