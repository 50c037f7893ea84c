package shim

import (
	"errors"
	"log/slog"
	"syscall"
	"time"

	"github.com/tether-ci/tether/protocol"
)

// engine is the shim's job engine, a state machine driven by one goroutine
// only (the serve loop): it owns the queue, the item that runs, the script
// that runs with its process, and the shim's lifetime limits. One
// goroutine (waitScripts) only waits for each script and reports its
// status on results. Every method takes the time it acts at, so the rules can be
// driven step by step.
type engine struct {
	cfg     *Config
	log     *slog.Logger
	em      *emitter
	starter starter
	files   fileSink
	masks   *masks

	// resumes holds the resume commands read and not answered yet; nil
	// when commands come only through onCommand.
	resumes *resumeBox

	// results carries the status of the script that ran, once it exited
	// and its output was drained.
	results chan scriptResult
	// waits hands each started script to waitScripts.
	waits chan *running

	queue []*item
	cur   *item    // the item whose scripts run now
	run   *running // the script that runs now (nil between scripts)

	seenJobs map[string]bool
	// seenCancels holds the IDs of the cancels acted on: a resent cancel
	// is not a second cancel (which would also stop the after-scripts).
	seenCancels map[string]bool

	lastCode   int
	stdinEOF   bool
	exitAsked  bool
	lastActive time.Time
	act        *activity // the pod's activity file (Config.ActivityFile)
	ttlAt      time.Time // zero = no TTL
	ttlRead    time.Time
	// ttlFromJob is set once a job's ttl_ms set ttlAt: the annotation
	// file is no longer read.
	ttlFromJob bool
	// deadline is the shim's deadline (zero = none): --deadline, or the
	// last job's deadline_ms.
	deadline time.Time

	// expired is set once the deadline passed while an item ran: its main
	// scripts were stopped, its after-scripts run until afterEnd, then the
	// shim ends with the deadline reason (expireMsg).
	expired     bool
	expireMsg   string
	afterEnd    time.Time
	afterBudget string // the after-scripts' budget and where it came from

	// ending is set once the shim decided to end: the running script is
	// stopped, and the final record is written when it ended (or at
	// giveUpAt, if it never reports).
	ending   *ending
	giveUpAt time.Time
}

// running is the script that runs now.
type running struct {
	p      proc
	script string
	phase  phase
	// stopReason says why the shim stopped it ("" = it was not): the
	// status record's error. The first reason is kept.
	stopReason string
	// killAt is when SIGKILL follows the SIGTERM of a stop (zero = none
	// pending).
	killAt time.Time
}

// scriptResult is a script's status as its goroutine reports it.
type scriptResult struct {
	run *running
	st  protocol.Status
}

func newEngine(cfg *Config, log *slog.Logger, em *emitter, st starter, files fileSink, m *masks, now time.Time) *engine {
	e := &engine{cfg: cfg, log: log, em: em, starter: st, files: files, masks: m,
		results: make(chan scriptResult, 1), waits: make(chan *running, 1),
		seenJobs: map[string]bool{}, seenCancels: map[string]bool{}, lastActive: now,
		act: newActivity(cfg.ActivityFile, cfg.IdleTimeout, log), deadline: cfg.Deadline}
	e.refreshTTL(now, true)
	go e.waitScripts()
	return e
}

// waitScripts waits for each started script in turn and reports its status
// on results. One goroutine for the engine's life does for every script:
// the engine starts a script only once the one before reported (or, giving
// up on it, ends), so there is never a second to wait for. A goroutine per
// script cost its creation and, starting on a small stack, a stack copy on
// the way to closing the script's output.
func (e *engine) waitScripts() {
	for r := range e.waits {
		e.results <- scriptResult{run: r, st: r.p.wait()}
	}
}

// step does what is due at now and starts the next script when none runs.
// Once the shim must end it writes the final record and returns the exit
// code and true.
func (e *engine) step(now time.Time) (int, bool) {
	if e.ending == nil {
		e.checkLimits(now)
		e.markBusy(now)
	}
	if e.ending != nil {
		return e.stepEnding(now)
	}
	if e.cur != nil && e.cur.timeoutDue(now) {
		reason := e.cur.timeOut()
		e.log.Info("the job's own timeout passed; stopping it", "job", e.cur.jobID())
		e.stopScript(now, reason, e.cfg.Grace)
	}
	e.killIfDue(now)
	e.advance(now)
	if e.expired && e.cur == nil {
		return e.finish(ending{reason: endDeadline, message: e.expireMsg}), true
	}
	if e.cur == nil && len(e.queue) == 0 && (e.exitAsked || (e.stdinEOF && e.cfg.ExitOnStdinEOF)) {
		reason := endExitCommand
		if !e.exitAsked {
			reason = endStdinEOF
		}
		return e.finish(ending{reason: reason, message: "all queued work is done"}), true
	}
	return 0, false
}

// stepEnding waits for the stopped script, then writes the final record.
func (e *engine) stepEnding(now time.Time) (int, bool) {
	if e.run != nil {
		if now.Before(e.giveUpAt) {
			e.killIfDue(now)
			return 0, false
		}
		e.log.Warn("the running script did not finish after SIGKILL; exiting anyway", "script", e.run.script)
		e.run = nil
	}
	if e.cur != nil {
		e.finishItem(now)
	}
	return e.finish(*e.ending), true
}

// finish writes the final record; nothing is written after it.
func (e *engine) finish(end ending) int {
	code := end.reason.code(e.lastCode)
	e.em.Close(protocol.Exit{Reason: end.reason.String(), ExitCode: code, Message: end.message})
	return code
}

// advance starts the next script when none runs: the current item's next
// one, else the next queued item's first. Items with nothing (more) to run
// are finished on the way.
func (e *engine) advance(now time.Time) {
	for e.run == nil {
		if e.cur == nil {
			if len(e.queue) == 0 || e.expired {
				return
			}
			e.cur, e.queue = e.queue[0], e.queue[1:]
			e.cur.start(now)
		}
		script, ph, ok := e.cur.nextScript()
		if !ok {
			e.finishItem(now)
			continue
		}
		e.startScript(e.cur, script, ph)
	}
}

// startScript writes the script's begin record and starts it; a script
// that cannot start (or, for a run command, must not) gets its status at
// once.
func (e *engine) startScript(it *item, script string, ph phase) {
	e.em.Record(protocol.TypeBegin, protocol.Begin{Script: script, Phase: string(ph), Job: it.jobID()})
	st := protocol.Status{Script: script}
	if it.single && it.mainStop != "" {
		st.CommandExitCode, st.Error = codeSkipped, it.mainStop+" before the script started"
		e.scriptDone(it, ph, st)
		return
	}
	if it.cmd.EnvFile != "" && it.env == nil {
		env, err := e.files.readEnvFile(it.cmd.EnvFile)
		if err != nil {
			st.CommandExitCode, st.Error = codeCannotExecute, err.Error()
			e.scriptDone(it, ph, st)
			return
		}
		it.env = append([]string{}, env...)
	}
	sc := scriptStart{path: script, shell: it.cmd.Shell, masks: e.masks.current(), env: it.env,
		stderr: it.cmd.Stderr == protocol.StderrSeparate}
	if ph == phaseMain && len(it.cmd.Argv) > 0 {
		sc.argv = it.cmd.Argv
	}
	p, err := e.starter.start(sc)
	if err != nil {
		var se *startError
		if errors.As(err, &se) {
			st.CommandExitCode, st.Error = se.code, se.msg
		} else {
			st.CommandExitCode, st.Error = codeCannotExecute, err.Error()
		}
		e.scriptDone(it, ph, st)
		return
	}
	r := &running{p: p, script: script, phase: ph}
	e.run = r
	e.waits <- r
}

// onResult takes the status of the script that ran.
func (e *engine) onResult(res scriptResult, now time.Time) {
	if res.run != e.run || e.cur == nil {
		e.log.Error("a script reported that the engine did not run; ignoring it", "script", res.run.script)
		return
	}
	st := res.st
	st.Script, st.Error = e.run.script, e.run.stopReason
	ph := e.run.phase
	e.run = nil
	e.active(now)
	e.scriptDone(e.cur, ph, st)
}

// scriptDone writes a script's status record and records its result. A
// job's status goes out with the record that follows at once (the next
// begin record or the job record).
func (e *engine) scriptDone(it *item, ph phase, st protocol.Status) {
	st.Phase, st.Job = string(ph), it.jobID()
	if it.single {
		e.em.Record(protocol.TypeStatus, st)
	} else {
		e.em.Hold(protocol.TypeStatus, st)
	}
	it.scriptEnded(ph, st)
}

// finishItem ends the current item: its delivered files are removed and,
// unless it ended silently, its job record is written.
func (e *engine) finishItem(now time.Time) {
	it := e.cur
	e.cur = nil
	done, code := it.result()
	for _, err := range removeFiles(e.cfg.FilesDir, it.cmd.Remove) {
		e.log.Warn("cannot remove a delivered file after its job", "err", err)
	}
	e.lastCode = code
	e.active(now)
	if !it.single && !it.silent {
		e.em.Record(protocol.TypeJob, done)
	}
}

// stopScript stops the running script: SIGTERM to its group now, SIGKILL
// once grace passed. A script already being stopped keeps its first reason
// and gets its SIGKILL no later than this stop's grace allows; one that
// already exited (its status is on its way) is not stopped at all.
func (e *engine) stopScript(now time.Time, reason string, grace time.Duration) {
	r := e.run
	if r == nil {
		return
	}
	kill := now.Add(grace)
	if r.stopReason == "" {
		if !r.p.signal(syscall.SIGTERM) {
			return
		}
		r.p.signal(syscall.SIGCONT) // a stopped group could not act on TERM
		r.stopReason, r.killAt = reason, kill
		return
	}
	if !r.killAt.IsZero() && kill.Before(r.killAt) {
		r.killAt = kill
	}
}

// killIfDue sends the SIGKILL of a stop whose grace passed.
func (e *engine) killIfDue(now time.Time) {
	if r := e.run; r != nil && !r.killAt.IsZero() && !now.Before(r.killAt) {
		r.killAt = time.Time{}
		r.p.signal(syscall.SIGKILL)
	}
}
