package shim

import (
	"fmt"
	"time"
)

// checkLimits acts on a deadline, TTL or idle timeout that passed by now.
func (e *engine) checkLimits(now time.Time) {
	if e.expired {
		if !now.Before(e.afterEnd) {
			e.end(now, ending{reason: endDeadline, message: fmt.Sprintf("%s; the after-scripts' budget (%s) ran out too", e.expireMsg, e.afterBudget)}, e.cfg.Grace)
			return
		}
	} else if !e.deadline.IsZero() && !now.Before(e.deadline) {
		msg := fmt.Sprintf("job deadline %s reached", e.deadline.UTC().Format(time.RFC3339))
		if budget, source := e.cur.afterTimeout(e.cfg.AfterTimeout); budget > 0 {
			e.expire(now, msg, budget, source)
		} else {
			e.end(now, ending{reason: endDeadline, message: msg}, e.cfg.Grace)
			return
		}
	}
	e.refreshTTL(now, false)
	if !e.ttlAt.IsZero() && !now.Before(e.ttlAt) {
		e.end(now, ending{reason: endTTL, message: fmt.Sprintf("pod TTL (%s annotation) expired at %s", TTLAnnotation, e.ttlAt.UTC().Format(time.RFC3339))}, e.cfg.Grace)
		return
	}
	if e.idleOver(now) {
		e.end(now, ending{reason: endIdle, message: e.idleMessage()}, e.cfg.Grace)
	}
}

// expire acts on the deadline while an item runs: queued work is dropped,
// the running main script is stopped (TERM, grace, KILL), and the item's
// after-scripts still run, within their budget counted from now plus the
// grace (source names where the budget came from, for the final record).
// The shim ends with the deadline reason once the item is done, or stops
// everything when the budget runs out.
func (e *engine) expire(now time.Time, msg string, budget time.Duration, source string) {
	e.log.Info("deadline reached; stopping the main scripts, the after-scripts still run", "after_timeout", budget)
	e.expired, e.expireMsg, e.afterBudget = true, msg, source
	e.afterEnd = now.Add(e.cfg.Grace + budget)
	e.queue = nil
	if e.cur.expire(msg) {
		e.stopScript(now, msg, e.cfg.Grace)
	}
}

// end decides that the shim ends: queued work is dropped, the running item
// runs no further script and writes no job record, and the running script
// is stopped (TERM, grace, KILL). step writes the final record once it
// ended.
func (e *engine) end(now time.Time, end ending, grace time.Duration) {
	if e.ending != nil {
		return
	}
	e.log.Info("stopping", "reason", end.reason.String(), "message", end.message)
	e.ending = &end
	e.queue = nil
	if e.cur != nil {
		e.cur.halt(end.message)
	}
	e.stopScript(now, end.message, grace)
	e.giveUpAt = now.Add(grace + e.cfg.DrainTimeout + 2*time.Second)
}

// nextWake returns how long the loop may sleep before something is due.
func (e *engine) nextWake(now time.Time) time.Duration {
	next := now.Add(time.Hour)
	consider := func(t time.Time) {
		if !t.IsZero() && t.Before(next) {
			next = t
		}
	}
	if e.run != nil {
		consider(e.run.killAt)
	}
	if e.ending != nil {
		consider(e.giveUpAt)
		return max(next.Sub(now), time.Millisecond)
	}
	if e.cur != nil {
		consider(e.cur.timeoutAt)
	}
	if e.expired {
		consider(e.afterEnd)
	} else {
		consider(e.deadline)
	}
	consider(e.ttlAt)
	if e.cfg.TTLFile != "" && !e.ttlFromJob {
		consider(e.ttlRead.Add(ttlRecheck))
	}
	if e.cfg.IdleTimeout > 0 && e.cur == nil {
		consider(e.idleFrom().Add(e.cfg.IdleTimeout))
	}
	if e.busy() {
		consider(e.act.nextMark(now))
	}
	return max(next.Sub(now), time.Millisecond)
}

// ttlRecheck is how often the annotations file is read again (the kubelet
// updates downward-API files when annotations change).
const ttlRecheck = 10 * time.Second

func (e *engine) refreshTTL(now time.Time, first bool) {
	if e.cfg.TTLFile == "" || e.ttlFromJob || (!first && now.Sub(e.ttlRead) < ttlRecheck) {
		return
	}
	e.ttlRead = now
	ttl, ok, err := readTTL(e.cfg.TTLFile)
	switch {
	case err != nil:
		if first {
			e.log.Warn("TTL not applied", "err", err)
		}
	case ok:
		from := e.cfg.Created
		if from.IsZero() {
			from = e.cfg.Start
		}
		e.ttlAt = from.Add(ttl)
	default:
		e.ttlAt = time.Time{}
	}
}
