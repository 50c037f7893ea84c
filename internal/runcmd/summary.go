package runcmd

import (
	"sync"
	"time"

	"github.com/tether-ci/tether/client"
)

// scriptsBegun records, in order, the scripts whose begin record arrived
// (the session's EventScriptBegin), so the job summary can tell the script
// that was running when the shim died from those that never started. The
// session calls its callback from its own goroutine; list may be called
// from any other.
type scriptsBegun struct {
	mu      sync.Mutex
	scripts []string
}

// events returns an Events callback that records each script begin and
// then hands every event to next.
func (b *scriptsBegun) events(next func(client.Event)) func(client.Event) {
	return func(ev client.Event) {
		if ev.Kind == client.EventScriptBegin {
			b.mu.Lock()
			b.scripts = append(b.scripts, ev.Script)
			b.mu.Unlock()
		}
		next(ev)
	}
}

// list returns the scripts that began, in order.
func (b *scriptsBegun) list() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.scripts...)
}

// jobAttrs returns the job summary's job-wide fields: the job's total
// duration since start, the scripts that began but reported no status
// (interrupted: the shim or its container ended while they ran) and the
// main scripts that never ran (skipped after a failure, a cancel, the
// deadline or an interruption). begun are the scripts that began, in
// order (scriptsBegun).
func jobAttrs(job client.Job, start time.Time, res client.Result, begun []string) []any {
	// Scripts run one at a time, each with its begin record before its
	// status: the n statuses are those of the first n scripts that began.
	var interrupted []string
	if len(begun) > len(res.Statuses) {
		interrupted = begun[len(res.Statuses):]
	}
	ran := map[string]bool{}
	for _, st := range res.Statuses {
		ran[st.Script] = true
	}
	for _, sc := range interrupted {
		ran[sc] = true
	}
	var skipped []string
	for _, sc := range job.Scripts {
		if !ran[sc] {
			skipped = append(skipped, sc)
		}
	}
	attrs := []any{"duration", time.Since(start).Round(time.Millisecond)}
	if len(interrupted) > 0 {
		attrs = append(attrs, "interrupted", interrupted)
	}
	if len(skipped) > 0 {
		attrs = append(attrs, "skipped", skipped)
	}
	return attrs
}
