package gitlab

import (
	"log/slog"
	"sync"
	"time"

	"github.com/tether-ci/tether/client"
)

// stageStep is one step of a stage the agent serves, in the order a
// stage passes them.
type stageStep int

const (
	// stepSettings: the stage's settings parsed (or the previous stage's
	// kept).
	stepSettings stageStep = iota
	// stepReady: the script read, the job response, the pod and the
	// connection to use known; the session starts.
	stepReady
	// stepJobSent: the session's first write (its resume and the job)
	// went out on the connection.
	stepJobSent
	// stepFirstBytes: the first bytes came back from the shim.
	stepFirstBytes
	// stepBegin: the script's begin record.
	stepBegin
	// stepStatus: the script's status record.
	stepStatus
	// stepExit: the exit code sent to the stage process.
	stepExit
	stageSteps
)

// String is the step's name in the agent's "stage served" record.
func (s stageStep) String() string {
	switch s {
	case stepSettings:
		return "settings"
	case stepReady:
		return "ready"
	case stepJobSent:
		return "job_sent"
	case stepFirstBytes:
		return "first_bytes"
	case stepBegin:
		return "script_begin"
	case stepStatus:
		return "script_status"
	case stepExit:
		return "exit_sent"
	}
	return "step?"
}

// stageClock times the steps of one stage the agent serves, from its
// request read off the socket: its "stage served" debug record says
// where the stage's time went (make bench's GitLab rows read it). Each
// step keeps its first time. The nil clock (a stage outside the agent)
// times nothing.
type stageClock struct {
	start time.Time
	mu    sync.Mutex
	at    [stageSteps]time.Duration
}

func newStageClock(start time.Time) *stageClock { return &stageClock{start: start} }

// mark notes that step happened now, unless it happened before.
func (c *stageClock) mark(step stageStep) {
	if c == nil {
		return
	}
	d := max(time.Since(c.start), 1) // 0 is a step not taken
	c.mu.Lock()
	if c.at[step] == 0 {
		c.at[step] = d
	}
	c.mu.Unlock()
}

// event marks the script's begin and status records.
func (c *stageClock) event(ev client.Event) {
	switch ev.Kind {
	case client.EventScriptBegin:
		c.mark(stepBegin)
	case client.EventScriptStatus:
		c.mark(stepStatus)
	}
}

// attrs are the steps' times for the stage's record (a step that did not
// happen is left out).
func (c *stageClock) attrs() []slog.Attr {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]slog.Attr, 0, stageSteps)
	for i, d := range c.at {
		if d != 0 {
			out = append(out, slog.Duration(stageStep(i).String(), d))
		}
	}
	return out
}

// clockedConn marks its clock's first write and first bytes read.
type clockedConn struct {
	client.Conn
	clock *stageClock
}

func (c *clockedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.clock.mark(stepJobSent)
	}
	return n, err
}

func (c *clockedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.clock.mark(stepFirstBytes)
	}
	return n, err
}
