package gitlab

import (
	"fmt"
	"sync"
	"time"

	"github.com/tether-ci/tether/client"
)

// stageNotices collects, from a stage's session events, what the job log
// must say about the stage besides the script's output: connections that
// broke (and for how long there was none), the shim gone before the
// stage ended, a command the shim rejected. gitlab run prints them after
// the stage's output, one line per fact, never between the script's
// bytes. The session calls event from its own goroutines.
type stageNotices struct {
	mu  sync.Mutex
	now func() time.Time
	// lost counts the connections that broke.
	lost int
	// down is how long there was no connection, over the losses that
	// ended in a new connection.
	down time.Duration
	// lostAt is when the connection broke, while no new one is up.
	lostAt time.Time
	// fromLog: the rest of the stage was read from the shim's log.
	fromLog  bool
	rejected []string
}

// newStageNotices returns an empty stageNotices.
func newStageNotices() *stageNotices { return &stageNotices{now: time.Now} }

// event is the session's Options.Events callback.
func (n *stageNotices) event(ev client.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch ev.Kind {
	case client.EventDisconnected:
		n.lost++
		n.lostAt = n.now()
	case client.EventConnected:
		if !n.lostAt.IsZero() {
			n.down += n.now().Sub(n.lostAt)
			n.lostAt = time.Time{}
		}
	case client.EventLogReplay:
		n.fromLog = true
	case client.EventShimError:
		n.rejected = append(n.rejected, ev.Message)
	}
}

// lines returns the job-log lines for stage, run in where (pod NS/NAME).
func (n *stageNotices) lines(stage, where string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	switch {
	case n.lost > 0 && n.lostAt.IsZero():
		out = append(out, fmt.Sprintf("WARNING: tether: the connection to %s broke %s while stage %s ran (%s without one in all); the stage ran on and its output resumed where it stopped, nothing lost or repeated",
			where, times(n.lost), stage, n.down.Round(time.Millisecond)))
	case n.lost > 0:
		out = append(out, fmt.Sprintf("WARNING: tether: the connection to %s broke %s while stage %s ran", where, times(n.lost), stage))
	}
	if n.fromLog {
		out = append(out, fmt.Sprintf("WARNING: tether: the shim in %s ended before stage %s did (its container stopped or the pod was deleted); the rest of the stage's output was read from the container's log", where, stage))
	}
	for _, m := range n.rejected {
		out = append(out, fmt.Sprintf("WARNING: tether: the shim in %s rejected a command: %s", where, m))
	}
	return out
}

// times is "once", "twice" or "N times".
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}
