package gitlab

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
)

// runStage runs a stage's job in the container t reaches, with one attach
// and no other request while the attach works: the session asks the shim
// where its stream ends (earlier stages' records stay in it) and sends the
// job over the same connection, and the transport reads the pod, and
// watches it for disruptions, only once an attach failed (or the script
// was killed by SIGTERM, as an eviction kills it). A refused attach (credentials or permissions) ends the
// stage at once, with what to do, where a broken one is retried.
//
// at says where the stage's records start: at the stream's end (a new
// stage: at.end when the agent knows it from the previous stage on the
// same connection, else as the shim answers), or at at.from for a stage
// an agent began (at.resume); its
// started, if set, learns where a new stage's records start before the
// job can reach the shim. last is the connection the session ended on
// (nil when it made none): the agent keeps it for the container's next
// stage.
func runStage(ctx context.Context, t *kube.Transport, job client.Job, opts client.Options, at stageStart) (res client.Result, last client.Conn, err error) {
	t.Options.AttachFirst = true
	t.Options.LazyDisruptionWatch = true
	rt := &refusalStop{Transport: t, spare: at.spare, adopt: at.adopt, clock: at.clock}
	switch {
	case at.resume:
		opts.From = at.from
	default:
		if at.endKnown && at.spare != nil {
			opts.From = at.end
		} else {
			opts.FromEnd = true
		}
		if at.started != nil {
			rt.tap = &startTap{found: func(from int64) { at.started(job.ID, from) }}
		}
	}
	res, err = kube.Run(ctx, rt, job, opts)
	if rt.refused != nil {
		err = fmt.Errorf("%w%s", rt.refused, apiAdvice(rt.refused))
	}
	return res, rt.last, err
}

// refusalStop is a transport whose Connect stops the session's reconnects
// when the API server refused the request for lack of credentials or
// permissions: no retry can change that.
type refusalStop struct {
	*kube.Transport
	refused error // the first refusal
	// tap, when set, reads the session's commands on every connection.
	tap *startTap
	// spare, when set, is the first connection: an attach the stage agent
	// kept after the container's previous stage.
	spare client.Conn
	// adopt, when set, wraps every connection the transport opens so
	// that the agent can keep it (spareSet.adopt).
	adopt func(client.Conn) client.Conn
	// last is the connection opened last (before any tap).
	last client.Conn
	// clock, when set, times the session's first write and read.
	clock *stageClock
}

func (r *refusalStop) Connect(ctx context.Context) (client.Conn, error) {
	var c client.Conn
	var err error
	if c, r.spare = r.spare, nil; c == nil {
		if c, err = r.Transport.Connect(ctx); err == nil && r.adopt != nil {
			c = r.adopt(c)
		}
	}
	if err == nil {
		r.last = c
	}
	if apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) {
		if r.refused == nil {
			r.refused = err
		}
		return nil, fmt.Errorf("the API server refused the attach: %w: %w", client.ErrShimGone, err)
	}
	if err == nil && r.tap != nil {
		c = &tappedConn{Conn: c, tap: r.tap}
	}
	if err == nil && r.clock != nil {
		c = &clockedConn{Conn: c, clock: r.clock}
	}
	return c, err
}
