// Package shim is tether-shim: PID 1 of a CI build container. It reads
// script paths and commands on stdin, runs the scripts one at a time, and
// writes their output and results as protocol records on stdout.
package shim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/tether-ci/tether/internal/reaper"
	"github.com/tether-ci/tether/internal/version"
	"github.com/tether-ci/tether/protocol"
)

// Shim is one serving tether-shim.
type Shim struct {
	cfg    *Config
	files  fileSink
	log    *slog.Logger
	em     *emitter
	store  replayStore
	runner *runner
	reaper *reaper.Reaper
}

// New prepares a shim writing records to stdout and diagnostics to log.
// The reaper must already exist (it listens for SIGCHLD from creation).
func New(cfg *Config, rp *reaper.Reaper, stdout io.Writer, log *slog.Logger) (*Shim, error) {
	var store replayStore = newMemoryStore(cfg.ReplayBytes)
	if cfg.SpoolDir != "" {
		fs, err := newFileStore(cfg.SpoolDir)
		if err != nil {
			return nil, err
		}
		store = fs
	}
	s := &Shim{cfg: cfg, log: log, store: store, reaper: rp, files: fileSink{dir: cfg.FilesDir}}
	s.em = newEmitter(stdout, store, log)
	shell, err := findShell(cfg.Shell)
	if err != nil {
		if cfg.Shell != "" {
			return nil, err
		}
		log.Warn("no shell found; every script will fail", "err", err)
	}
	s.runner = &runner{cfg: cfg, shell: shell, explicitShell: cfg.Shell != "", reaper: rp, em: s.em, log: log, env: scriptEnv(os.Environ(), cfg.EnvNames), masks: &masks{},
		mem: findMemCgroup("/proc/self/cgroup", "/proc/self/mountinfo")}
	values, err := maskEnvValues(cfg.MaskEnv, os.Getenv)
	if err != nil {
		return nil, err
	}
	s.runner.masks.add(values)
	return s, nil
}

// commandEvent is what the stdin reader hands to the serve loop.
type commandEvent struct {
	cmd protocol.Command
	err error // *protocol.CommandError, io.EOF, or a read error
}

// loopState is the serve loop's own state; only the loop touches it.
type loopState struct {
	queue    []*item
	current  *item
	done     chan int
	seenJobs map[string]bool
	// seenCancels holds the IDs of the cancels acted on: a resent cancel
	// is not a second cancel (which would also stop the after-scripts).
	seenCancels map[string]bool
	lastCode    int
	stdinEOF    bool
	exitAsked   bool
	lastActive  time.Time
	ttlAt       time.Time // zero = no TTL
	ttlRead     time.Time
	// expired is set once the deadline passed while a job was running:
	// its main script was stopped, its after-scripts run until afterEnd,
	// then the shim exits with the deadline reason (expireMsg).
	expired   bool
	expireMsg string
	afterEnd  time.Time
}

// Serve runs the shim until it decides to exit and returns its exit code.
// signals delivers the signals the process receives (see Signals).
func (s *Shim) Serve(ctx context.Context, stdin io.Reader, signals <-chan os.Signal) int {
	defer s.store.Close()
	s.em.Record(protocol.TypeHello, protocol.Hello{
		Protocol: protocol.Version, Shim: version.Version, MaxRecord: protocol.MaxRecord,
		PID: os.Getpid(), Shell: s.runner.shell, TTY: s.cfg.TTY,
		Replay: s.store.Kind(), ReplayBytes: replayBytes(s.store, s.cfg),
	})
	cmds := make(chan commandEvent)
	go readCommands(ctx, stdin, cmds)

	st := &loopState{done: make(chan int, 1), seenJobs: map[string]bool{}, seenCancels: map[string]bool{}, lastActive: time.Now()}
	s.refreshTTL(st, true)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if st.expired && st.current == nil {
			return s.finish(st, protocol.ReasonDeadline, 124, st.expireMsg)
		}
		s.startNext(st)
		if st.current == nil && len(st.queue) == 0 && (st.exitAsked || (st.stdinEOF && s.cfg.ExitOnStdinEOF)) {
			reason := protocol.ReasonExitCommand
			if !st.exitAsked {
				reason = protocol.ReasonStdinEOF
			}
			return s.finish(st, reason, st.lastCode, "all queued work is done")
		}
		if reason, code, msg := s.due(st, time.Now()); reason != "" {
			if reason == protocol.ReasonDeadline && !st.expired && st.current != nil && s.cfg.AfterTimeout > 0 {
				s.expire(st, msg)
				continue
			}
			return s.halt(st, reason, code, msg, s.cfg.Grace)
		}
		resetTimer(timer, s.nextWake(st, time.Now()))
		select {
		case <-ctx.Done():
			return s.halt(st, protocol.ReasonSignal, 128+15, "shim context ended", s.cfg.Grace)
		case ev := <-cmds:
			if reason, code, msg := s.handle(st, ev); reason != "" {
				return s.halt(st, reason, code, msg, s.cfg.Grace)
			}
		case code := <-st.done:
			st.current, st.lastCode, st.lastActive = nil, code, time.Now()
		case sig := <-signals:
			if reason, code, msg := s.onSignal(sig); reason != "" {
				return s.halt(st, reason, code, msg, s.cfg.Grace)
			}
		case <-s.em.failed:
			return s.halt(st, protocol.ReasonFatal, 70, "the record stream on stdout failed", 0)
		case <-timer.C:
		}
	}
}

func replayBytes(store replayStore, cfg *Config) int64 {
	if store.Kind() == "memory" {
		return cfg.ReplayBytes
	}
	return 0
}

// readCommands turns stdin into command events until EOF.
func readCommands(ctx context.Context, stdin io.Reader, out chan<- commandEvent) {
	r := protocol.NewCommandReader(stdin)
	for {
		c, err := r.Next()
		select {
		case out <- commandEvent{cmd: c, err: err}:
		case <-ctx.Done():
			return
		}
		var ce *protocol.CommandError
		if err != nil && !errors.As(err, &ce) {
			return
		}
	}
}

// startNext starts the next queued item when nothing runs.
func (s *Shim) startNext(st *loopState) {
	if st.current != nil || len(st.queue) == 0 {
		return
	}
	it := st.queue[0]
	st.queue = st.queue[1:]
	st.current = it
	go func() { st.done <- s.execute(it) }()
}

// handle acts on one command event. A non-empty reason means the shim must
// stop (stdin failed).
func (s *Shim) handle(st *loopState, ev commandEvent) (string, int, string) {
	var ce *protocol.CommandError
	switch {
	case errors.As(ev.err, &ce):
		s.em.Record(protocol.TypeError, protocol.ErrorRecord{Error: ce.Error(), Input: redactMasks(ce.Input)})
		return "", 0, ""
	case errors.Is(ev.err, io.EOF):
		st.stdinEOF = true
		s.log.Info("stdin closed")
		return "", 0, ""
	case ev.err != nil:
		s.log.Error("reading commands failed", "err", ev.err)
		st.stdinEOF = true
		return "", 0, ""
	}
	c := ev.cmd
	st.lastActive = time.Now()
	switch c.Cmd {
	case protocol.CmdRun:
		st.queue = append(st.queue, &item{cmd: c})
	case protocol.CmdMask:
		s.runner.masks.add(c.Mask)
	case protocol.CmdFile:
		if err := s.files.write(c); err != nil {
			s.em.Record(protocol.TypeError, protocol.ErrorRecord{Error: err.Error(), Input: "file " + c.Path})
		}
	case protocol.CmdJob:
		s.runner.masks.add(c.Mask)
		if c.ID != "" && st.seenJobs[c.ID] {
			s.log.Debug("ignoring a job that was already received", "job", c.ID)
			return "", 0, ""
		}
		if c.ID != "" {
			st.seenJobs[c.ID] = true
		}
		st.queue = append(st.queue, &item{cmd: c})
	case protocol.CmdCancel:
		if c.ID != "" && st.seenCancels[c.ID] {
			s.log.Debug("ignoring a cancel that was already received", "cancel", c.ID)
			return "", 0, ""
		}
		if c.ID != "" {
			st.seenCancels[c.ID] = true
		}
		grace := s.cfg.Grace
		if c.GraceMS > 0 {
			grace = time.Duration(c.GraceMS) * time.Millisecond
		}
		s.cancel(st, grace)
	case protocol.CmdPing:
		s.ping(st, c.Nonce)
	case protocol.CmdResume:
		s.em.Resume(c.Nonce, c.From)
	case protocol.CmdExit:
		st.exitAsked = true
	}
	return "", 0, ""
}

// cancel stops the running script and marks every queued item cancelled.
func (s *Shim) cancel(st *loopState, grace time.Duration) {
	for _, it := range st.queue {
		it.cancel(true)
	}
	if st.current == nil {
		return
	}
	all := st.current.cancel(false)
	s.runner.stopRunning(grace, "cancelled by the client", func(phase string) bool { return all || phase != "after" })
}

// expire acts on the deadline while a job runs: queued work is dropped, the
// running main script is stopped (TERM, grace, KILL), and the job's
// after-scripts still run, within the after-timeout budget counted from
// now plus the grace. The loop exits with the deadline reason once the job
// is done, or halts everything when the budget runs out.
func (s *Shim) expire(st *loopState, msg string) {
	s.log.Info("deadline reached; stopping the main scripts, the after-scripts still run", "after_timeout", s.cfg.AfterTimeout)
	st.expired, st.expireMsg = true, msg
	st.afterEnd = time.Now().Add(s.cfg.Grace + s.cfg.AfterTimeout)
	for _, it := range st.queue {
		it.setHalt(msg)
	}
	st.queue = nil
	st.current.expire(msg)
	s.runner.stopRunning(s.cfg.Grace, msg, func(phase string) bool { return phase != "after" })
}

func (s *Shim) ping(st *loopState, nonce string) {
	a := protocol.Alive{Nonce: nonce, State: protocol.StateIdle, End: s.em.Offset()}
	if p := s.runner.running(); p != nil {
		a.State, a.Script = protocol.StateRunning, p.script
	} else if st.current != nil || len(st.queue) > 0 {
		a.State = protocol.StateRunning
	}
	s.em.Unsequenced(protocol.TypeAlive, a)
}

// halt stops all work (TERM, grace, KILL for the running script), writes the
// final record and returns the exit code.
func (s *Shim) halt(st *loopState, reason string, code int, msg string, grace time.Duration) int {
	s.log.Info("stopping", "reason", reason, "message", msg)
	for _, it := range st.queue {
		it.setHalt(msg)
	}
	st.queue = nil
	if st.current != nil {
		st.current.setHalt(msg)
		if p := s.runner.running(); p != nil {
			p.stop(grace, msg)
		}
		wait := time.NewTimer(grace + s.cfg.DrainTimeout + 2*time.Second)
		select {
		case <-st.done:
		case <-wait.C:
			s.log.Warn("the running script did not finish after SIGKILL; exiting anyway")
		}
		wait.Stop()
		st.current = nil
	}
	return s.finish(st, reason, code, msg)
}

// finish writes the final record; nothing is written after it.
func (s *Shim) finish(_ *loopState, reason string, code int, msg string) int {
	s.em.Close(protocol.Exit{Reason: reason, ExitCode: code, Message: msg})
	return code
}

// due reports a deadline, TTL or idle timeout that has passed.
func (s *Shim) due(st *loopState, now time.Time) (string, int, string) {
	if st.expired {
		if !now.Before(st.afterEnd) {
			return protocol.ReasonDeadline, 124, fmt.Sprintf("%s; the after-scripts' budget (--after-timeout %s) ran out too", st.expireMsg, s.cfg.AfterTimeout)
		}
	} else if !s.cfg.Deadline.IsZero() && !now.Before(s.cfg.Deadline) {
		return protocol.ReasonDeadline, 124, fmt.Sprintf("job deadline %s reached", s.cfg.Deadline.UTC().Format(time.RFC3339))
	}
	s.refreshTTL(st, false)
	if !st.ttlAt.IsZero() && !now.Before(st.ttlAt) {
		return protocol.ReasonTTL, 124, fmt.Sprintf("pod TTL (%s annotation) expired at %s", TTLAnnotation, st.ttlAt.UTC().Format(time.RFC3339))
	}
	if s.cfg.IdleTimeout > 0 && st.current == nil && len(st.queue) == 0 && now.Sub(st.lastActive) >= s.cfg.IdleTimeout {
		return protocol.ReasonIdle, 125, fmt.Sprintf("no command or ping for %s while idle: the client is gone", s.cfg.IdleTimeout)
	}
	return "", 0, ""
}

// nextWake returns how long the loop may sleep before something is due.
func (s *Shim) nextWake(st *loopState, now time.Time) time.Duration {
	next := now.Add(time.Hour)
	consider := func(t time.Time) {
		if !t.IsZero() && t.Before(next) {
			next = t
		}
	}
	if st.expired {
		consider(st.afterEnd)
	} else {
		consider(s.cfg.Deadline)
	}
	consider(st.ttlAt)
	if s.cfg.TTLFile != "" {
		consider(st.ttlRead.Add(ttlRecheck))
	}
	if s.cfg.IdleTimeout > 0 && st.current == nil {
		consider(st.lastActive.Add(s.cfg.IdleTimeout))
	}
	return max(next.Sub(now), time.Millisecond)
}

// ttlRecheck is how often the annotations file is read again (the kubelet
// updates downward-API files when annotations change).
const ttlRecheck = 10 * time.Second

func (s *Shim) refreshTTL(st *loopState, first bool) {
	if s.cfg.TTLFile == "" || (!first && time.Since(st.ttlRead) < ttlRecheck) {
		return
	}
	st.ttlRead = time.Now()
	ttl, ok, err := readTTL(s.cfg.TTLFile)
	switch {
	case err != nil:
		if first {
			s.log.Warn("TTL not applied", "err", err)
		}
	case ok:
		from := s.cfg.Created
		if from.IsZero() {
			from = s.cfg.Start
		}
		st.ttlAt = from.Add(ttl)
	default:
		st.ttlAt = time.Time{}
	}
}

func resetTimer(t *time.Timer, d time.Duration) {
	t.Stop()
	select {
	case <-t.C:
	default:
	}
	t.Reset(d)
}
