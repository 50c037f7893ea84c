package shim

import (
	"fmt"
	"time"

	"github.com/tether-ci/tether/protocol"
)

// phase is the part of a job a script belongs to, as begin and status
// records name it.
type phase string

// The phases of a job.
const (
	phaseMain  phase = "script" // the main scripts, run in order until one fails
	phaseAfter phase = "after"  // the after-scripts, run whatever happened
)

// stopCancel is the reason a cancel gives for what it stops.
const stopCancel = "cancelled by the client"

// item is one queued unit of work: a single script (run command or plain
// path) or a job. Only the engine's loop touches it.
type item struct {
	cmd protocol.Command
	// single is a run command: one script, no job record, and a status
	// record even when it is stopped before it started.
	single bool

	phase   phase
	next    int  // index of the next script of phase
	started bool // a script of the item was started (or refused to start)

	// mainStop and afterStop say why the remaining scripts of each phase
	// are skipped ("" = they run).
	mainStop, afterStop string
	// cancelled: a cancel reached the item (the job record says so).
	cancelled bool
	// silent: the shim is ending or the deadline passed, so the item ends
	// without a job record (the final record says why).
	silent bool
	// timeoutAt is when the job's own timeout (timeout_ms) passes, counted
	// from its start (zero: none, or it was acted on); timedOut is set
	// once it stopped the job's main scripts.
	timeoutAt time.Time
	timedOut  bool

	done protocol.JobDone

	// env are the job's variables from its env_file, read when its first
	// script starts (nil until then).
	env []string
}

func newItem(c protocol.Command) *item {
	it := &item{cmd: c, phase: phaseMain, done: protocol.JobDone{Job: c.ID}}
	switch {
	case c.Cmd == protocol.CmdRun:
		it.single = true
		it.cmd.Scripts, it.cmd.After = []string{c.Script}, nil
	case len(c.Argv) > 0:
		// The program is the job's one main script; its records name
		// it by argv[0].
		it.cmd.Scripts = []string{c.Argv[0]}
	}
	return it
}

// cancel applies a cancel to the item and reports whether the script that
// runs now (of the item's current phase) must stop. A first cancel of a
// started job skips its remaining main scripts and spares its
// after-scripts; a second cancel, a cancel during the after-scripts or a
// cancel of an item still queued stops everything.
func (it *item) cancel() bool {
	if !it.started || it.cancelled || it.phase == phaseAfter {
		it.afterStop = stopCancel
	}
	it.cancelled = true
	if it.mainStop == "" {
		it.mainStop = stopCancel
	}
	return it.phase == phaseMain || it.afterStop != ""
}

// expire applies the deadline: the remaining main scripts are skipped, the
// after-scripts still run, and no job record is written. It reports
// whether the script that runs now must stop (a main script).
func (it *item) expire(reason string) bool {
	it.silent = true
	if it.mainStop == "" {
		it.mainStop = reason
	}
	return it.phase == phaseMain
}

// afterTimeout returns the after-scripts' budget once the deadline stopped
// the item (0 = they do not run then): the job's own, else def (the
// shim's --after-timeout), and where it came from. A nil item (nothing
// runs) has none.
func (it *item) afterTimeout(def time.Duration) (time.Duration, string) {
	if it == nil {
		return 0, ""
	}
	switch ms := it.cmd.AfterTimeoutMS; {
	case ms > 0:
		d := time.Duration(ms) * time.Millisecond
		return d, "the job's after-timeout " + d.String()
	case ms < 0:
		return 0, ""
	}
	return def, "--after-timeout " + def.String()
}

// start marks the item started at now and starts its own timeout.
func (it *item) start(now time.Time) {
	it.started = true
	if ms := it.cmd.TimeoutMS; ms > 0 && !it.single {
		it.timeoutAt = now.Add(time.Duration(ms) * time.Millisecond)
	}
}

// timeoutDue reports whether the item's own timeout passed by now; it
// reports it once.
func (it *item) timeoutDue(now time.Time) bool {
	if it.timeoutAt.IsZero() || now.Before(it.timeoutAt) {
		return false
	}
	it.timeoutAt = time.Time{}
	return true
}

// timeOut applies the job's own timeout: none of its remaining scripts run,
// after-scripts included, and it returns the reason for the script that
// runs now, which must stop. The job record is written as usual.
func (it *item) timeOut() string {
	reason := fmt.Sprintf("%s (%s)", protocol.JobTimeoutReason, time.Duration(it.cmd.TimeoutMS)*time.Millisecond)
	if it.phase == phaseMain && it.mainStop == "" {
		it.timedOut = true
	}
	if it.mainStop == "" {
		it.mainStop = reason
	}
	if it.afterStop == "" {
		it.afterStop = reason
	}
	return reason
}

// halt stops the item at once: no more scripts, no job record.
func (it *item) halt(reason string) {
	it.silent = true
	it.mainStop, it.afterStop = reason, reason
}

// nextScript returns the next script to run and its phase, moving on to
// the after-scripts when the main scripts are done, failed or stopped.
// ok is false when the item is finished. A run command's script is
// returned even when stopped: it gets a status saying it did not start.
func (it *item) nextScript() (script string, ph phase, ok bool) {
	if it.phase == phaseMain {
		if it.next < len(it.cmd.Scripts) && (it.mainStop == "" || it.single) && it.done.ExitCode == 0 {
			it.next++
			return it.cmd.Scripts[it.next-1], phaseMain, true
		}
		it.phase, it.next = phaseAfter, 0
	}
	if it.next < len(it.cmd.After) && it.afterStop == "" {
		it.next++
		return it.cmd.After[it.next-1], phaseAfter, true
	}
	return "", phaseAfter, false
}

// scriptEnded records a script's status: the first failing main script
// decides the job's exit code.
func (it *item) scriptEnded(ph phase, st protocol.Status) {
	if ph == phaseMain && st.CommandExitCode != 0 && it.done.ExitCode == 0 {
		it.done.ExitCode, it.done.FailedScript = st.CommandExitCode, st.Script
	}
}

// jobID is the job the item's records name ("" for a run command).
func (it *item) jobID() string {
	if it.single {
		return ""
	}
	return it.cmd.ID
}

// result returns the job record of a finished item and its exit code: a
// run command's script's code; a job's first failing main script's code,
// or 143 for a cancelled job that did not fail otherwise.
func (it *item) result() (protocol.JobDone, int) {
	d := it.done
	if it.single {
		return d, d.ExitCode
	}
	d.Cancelled = it.cancelled
	if d.Cancelled && d.ExitCode == 0 {
		d.ExitCode = codeSIGTERM
	}
	if it.timedOut && d.ExitCode == 0 {
		// Its timeout cut the main scripts short without a failure (the
		// stopped script exited 0, or none ran at that moment).
		d.ExitCode = codeTimedOut
	}
	return d, d.ExitCode
}
