// Package shim is tether-shim: PID 1 of a CI build container. It reads
// script paths and commands on stdin, runs the scripts one at a time, and
// writes their output and results as protocol records on stdout.
package shim

import (
	"context"
	"errors"
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
	log    *slog.Logger
	em     *emitter
	store  replayStore
	runner *runner
	engine *engine
	// aliases are the command aliases as they resolved, for the hello.
	aliases []protocol.CommandAlias
	// aliasTemp is a directory of alias links to remove at the end ("" for none).
	aliasTemp string
}

// New prepares a shim writing records to stdout and diagnostics to log.
// The reaper must already exist (it listens for SIGCHLD from creation).
func New(cfg *Config, rp *reaper.Reaper, stdout io.Writer, log *slog.Logger) (*Shim, error) {
	store, err := newReplayStore(cfg)
	if err != nil {
		return nil, err
	}
	s := &Shim{cfg: cfg, log: log, store: store}
	s.em = newEmitter(stdout, store, log)
	shell, err := findShell(cfg.Shell)
	if err != nil {
		if cfg.Shell != "" {
			return nil, err
		}
		log.Warn("no shell found; every script will fail", "err", err)
	}
	env := scriptEnv(os.Environ(), cfg.EnvNames)
	s.aliases, env, s.aliasTemp = commandAliases(cfg, env, log)
	s.runner = &runner{cfg: cfg, shell: shell, explicitShell: cfg.Shell != "", reaper: rp, em: s.em, log: log, env: env,
		oom: newOOMCounter(findMemCgroup("/proc/self/cgroup", "/proc/self/mountinfo"))}
	values, err := maskEnvValues(cfg.MaskEnv, os.Getenv)
	if err != nil {
		return nil, err
	}
	m := &masks{}
	m.add(values)
	s.engine = newEngine(cfg, log, s.em, s.runner, fileSink{dir: cfg.FilesDir}, m, time.Now())
	return s, nil
}

// Serve runs the shim until it decides to exit and returns its exit code.
// signals delivers the signals the process receives (see Signals). The
// loop is the engine's only driver: it hands the engine each command,
// script result, signal and tick.
func (s *Shim) Serve(ctx context.Context, stdin io.Reader, signals <-chan os.Signal) int {
	defer s.store.Close()
	defer s.engine.act.close()
	if s.aliasTemp != "" {
		defer os.RemoveAll(s.aliasTemp)
	}
	s.em.Record(protocol.TypeHello, protocol.Hello{
		Protocol: protocol.Version, Shim: version.Get(), MaxRecord: protocol.MaxRecord,
		PID: os.Getpid(), Shell: s.runner.shell, TTY: s.cfg.TTY,
		Replay: s.store.Kind(), ReplayBytes: replayBytes(s.store, s.cfg),
		CommandAliases: s.aliases,
	})
	// A few commands are read ahead, so that a resume behind them reaches
	// the resume box while a replay runs (see resumes.go).
	cmds := make(chan commandEvent, 8)
	resumes := newResumeBox(s.log)
	if f, ok := stdin.(*os.File); ok {
		resumes.unread = pendingBytes(f)
	}
	go readCommands(ctx, stdin, cmds, resumes)

	e := s.engine
	e.resumes = resumes
	ctxDone, failed := ctx.Done(), s.em.failed
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if code, done := e.step(time.Now()); done {
			return code
		}
		resetTimer(timer, e.nextWake(time.Now()))
		select {
		case <-ctxDone:
			ctxDone = nil
			e.end(time.Now(), ending{reason: endSignal, message: "shim context ended"}, s.cfg.Grace)
		case <-resumes.ready:
			e.onResumes(resumes.take(), time.Now())
		case ev := <-cmds:
			// A resume read before ev is answered before it.
			e.onResumes(resumes.take(), time.Now())
			e.onCommand(ev, time.Now())
		case res := <-e.results:
			e.onResult(res, time.Now())
		case sig := <-signals:
			e.onSignal(sig, time.Now())
		case <-failed:
			failed = nil
			e.end(time.Now(), ending{reason: endFatal, message: "the record stream on stdout failed"}, 0)
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

// readCommands turns stdin into command events until EOF. Resume
// commands go to resumes instead, without waiting.
func readCommands(ctx context.Context, stdin io.Reader, out chan<- commandEvent, resumes *resumeBox) {
	r := protocol.NewCommandReader(stdin)
	for {
		c, err := r.Next()
		if err == nil && c.Cmd == protocol.CmdResume {
			resumes.put(c)
			continue
		}
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

func resetTimer(t *time.Timer, d time.Duration) {
	t.Stop()
	select {
	case <-t.C:
	default:
	}
	t.Reset(d)
}
