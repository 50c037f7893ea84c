package shim

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/tether-ci/tether/protocol"
)

// commandEvent is what the stdin reader hands to the serve loop.
type commandEvent struct {
	cmd protocol.Command
	err error // *protocol.CommandError, io.EOF, or a read error
}

// onCommand acts on one command event. Once the shim is ending, commands
// are ignored.
func (e *engine) onCommand(ev commandEvent, now time.Time) {
	if e.ending != nil {
		return
	}
	var ce *protocol.CommandError
	switch {
	case errors.As(ev.err, &ce):
		e.em.Record(protocol.TypeError, protocol.ErrorRecord{Error: ce.Error(), Input: redactMasks(ce.Input)})
		return
	case errors.Is(ev.err, io.EOF):
		e.stdinEOF = true
		e.log.Info("stdin closed")
		return
	case ev.err != nil:
		e.log.Error("reading commands failed", "err", ev.err)
		e.stdinEOF = true
		return
	}
	c := ev.cmd
	e.active(now)
	switch c.Cmd {
	case protocol.CmdRun:
		e.queue = append(e.queue, newItem(c))
	case protocol.CmdMask:
		e.masks.add(c.Mask)
	case protocol.CmdFile:
		if err := e.files.write(c); err != nil {
			e.em.Record(protocol.TypeError, protocol.ErrorRecord{Error: err.Error(), Input: "file " + c.Path})
		}
	case protocol.CmdJob:
		e.masks.add(c.Mask)
		if c.ID != "" && e.seenJobs[c.ID] {
			e.log.Debug("ignoring a job that was already received", "job", c.ID)
			return
		}
		if c.ID != "" {
			e.seenJobs[c.ID] = true
		}
		e.jobLimits(c, now)
		e.queue = append(e.queue, newItem(c))
	case protocol.CmdCancel:
		if c.ID != "" && e.seenCancels[c.ID] {
			e.log.Debug("ignoring a cancel that was already received", "cancel", c.ID)
			return
		}
		if c.ID != "" {
			e.seenCancels[c.ID] = true
		}
		grace := e.cfg.Grace
		if c.GraceMS > 0 {
			grace = time.Duration(c.GraceMS) * time.Millisecond
		}
		e.cancel(now, grace)
	case protocol.CmdPing:
		e.ping(c.Nonce)
	case protocol.CmdResume:
		e.em.ResumeAll([]protocol.Command{c}, e.moreResumes())
	case protocol.CmdExit:
		e.exitAsked = true
	}
}

// onResumes answers resume commands (none: nothing to do). Once the shim
// is ending, they are ignored like every command.
func (e *engine) onResumes(rs []protocol.Command, now time.Time) {
	if len(rs) == 0 || e.ending != nil {
		return
	}
	e.active(now)
	e.em.ResumeAll(rs, e.moreResumes())
}

// moreResumes returns what takes the resumes that arrive during a replay,
// nil without a resume box.
func (e *engine) moreResumes() func() []protocol.Command {
	if e.resumes == nil {
		return nil
	}
	return e.resumes.takeSettled
}

// cancel marks every queued item cancelled and applies the cancel to the
// running item, stopping its script when the cancel means it (see
// item.cancel). Marking and stopping are one step of the loop: the script
// stopped is the one that ran when the cancel was read, never one started
// after it.
func (e *engine) cancel(now time.Time, grace time.Duration) {
	for _, it := range e.queue {
		it.cancel()
	}
	if e.cur != nil && e.cur.cancel() {
		e.stopScript(now, stopCancel, grace)
	}
}

func (e *engine) ping(nonce string) {
	a := protocol.Alive{Nonce: nonce, State: protocol.StateIdle, End: e.em.Offset()}
	if e.run != nil {
		a.State, a.Script = protocol.StateRunning, e.run.script
	} else if e.cur != nil || len(e.queue) > 0 {
		a.State = protocol.StateRunning
	}
	e.em.Unsequenced(protocol.TypeAlive, a)
}

// onSignal forwards sig to the running script's group. SIGTERM ends the
// shim instead: the job is stopped (TERM, grace, KILL) and the shim exits
// 143.
func (e *engine) onSignal(sig os.Signal, now time.Time) {
	ss, ok := sig.(syscall.Signal)
	if !ok || e.ending != nil {
		return
	}
	if ss == syscall.SIGTERM {
		e.end(now, ending{reason: endSignal, message: "the shim received SIGTERM (pod deletion or container stop)"}, e.cfg.Grace)
		return
	}
	if e.run != nil {
		e.log.Info("forwarding signal to the running script", "signal", signalName(ss), "script", e.run.script)
		e.run.p.signal(ss)
	}
}
