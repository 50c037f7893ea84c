package shim

import (
	"fmt"
	"time"
)

// active records a client's or a script's activity at now: the idle
// timeout counts from it, and the pod's activity file is marked.
func (e *engine) active(now time.Time) {
	e.lastActive = now
	e.act.mark(now)
}

// busy reports whether the shim has work: a running item or queued ones.
func (e *engine) busy() bool { return e.cur != nil || len(e.queue) > 0 }

// markBusy marks the pod's activity file while the shim has work, so the
// pod's other shims do not count the time as idle.
func (e *engine) markBusy(now time.Time) {
	if e.busy() {
		e.act.markDue(now)
	}
}

// idleFrom is when the idle timeout counts from: the later of this shim's
// last activity and the pod's (the activity file, as last read).
func (e *engine) idleFrom() time.Time {
	if e.act.seen.After(e.lastActive) {
		return e.act.seen
	}
	return e.lastActive
}

// idleOver reports whether the idle timeout passed at now. The activity
// file is read only once this shim's own clock ran out.
func (e *engine) idleOver(now time.Time) bool {
	idle := e.cfg.IdleTimeout
	if idle <= 0 || e.busy() || now.Sub(e.idleFrom()) < idle {
		return false
	}
	e.act.latest()
	return now.Sub(e.idleFrom()) >= idle
}

// idleMessage says why the idle timeout ended the shim.
func (e *engine) idleMessage() string {
	if e.cfg.ActivityFile != "" {
		return fmt.Sprintf("no command or ping for %s while idle, and no activity in the pod's other containers: the client is gone", e.cfg.IdleTimeout)
	}
	return fmt.Sprintf("no command or ping for %s while idle: the client is gone", e.cfg.IdleTimeout)
}
