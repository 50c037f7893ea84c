package shim

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tether-ci/tether/internal/reaper"
	"github.com/tether-ci/tether/protocol"
)

// runner runs one script at a time: its own process group, stdin
// /dev/null, stdout and stderr on one pipe (or a pty) pumped to the emitter.
type runner struct {
	cfg   *Config
	shell string
	// explicitShell is set when --shell chose the shell: it then runs
	// every script, shebang or not.
	explicitShell bool
	reaper        *reaper.Reaper
	em            *emitter
	log           *slog.Logger

	// env is the scripts' environment: the shim's, without the variables
	// that configured the shim.
	env []string

	// mem is the memory cgroup, read to report out-of-memory kills.
	mem memCgroup

	// masks are the values masked in script output.
	masks *masks

	mu      sync.Mutex
	current *process
	devnull *os.File // every script's stdin, opened once
}

// scriptEnv returns environ without the variables named in drop.
func scriptEnv(environ []string, drop map[string]bool) []string {
	env := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !drop[name] {
			env = append(env, kv)
		}
	}
	return env
}

// process is a running script.
type process struct {
	script string
	phase  string // "script" or "after"
	pgid   int
	done   chan struct{} // closed when the script's main process exited

	mu     sync.Mutex
	reason string // why the shim stopped it, for the status record
}

// stop sends SIGTERM to the script's process group and SIGKILL after grace
// if the script is still running then. The first reason given is kept.
func (p *process) stop(grace time.Duration, reason string) {
	p.mu.Lock()
	if p.reason != "" {
		p.mu.Unlock()
		return
	}
	p.reason = reason
	p.mu.Unlock()
	_ = syscall.Kill(-p.pgid, syscall.SIGTERM)
	_ = syscall.Kill(-p.pgid, syscall.SIGCONT) // a stopped group could not act on TERM
	go func() {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-p.done:
		case <-t.C:
			_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		}
	}()
}

func (p *process) stopReason() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reason
}

// stopRunning stops the running script if stop says so for its phase
// ("script" or "after"). The check and the stop happen under the lock that
// also guards starting a script, so a script that starts meanwhile (a
// job's first after-script, say) is never mistaken for the one meant.
func (r *runner) stopRunning(grace time.Duration, reason string, stop func(phase string) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.current; p != nil && stop(p.phase) {
		p.stop(grace, reason)
	}
}

// running returns the running script, or nil.
func (r *runner) running() *process {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.current
}

// signal forwards sig to the running script's process group.
func (r *runner) signal(sig syscall.Signal) {
	if p := r.running(); p != nil {
		r.log.Debug("forwarding signal", "signal", signalName(sig), "pgid", p.pgid)
		_ = syscall.Kill(-p.pgid, sig)
	}
}

// run runs script and returns its status after emitting the begin and
// status records. stopped reports a stop requested before the script could
// start (the script is then not run). With more set, the caller writes
// another record at once (a job's next begin record, or its job record),
// and the status record goes out with it.
func (r *runner) run(script, phase, job, shell string, stopped func() string, more bool) protocol.Status {
	r.em.Record(protocol.TypeBegin, protocol.Begin{Script: script, Phase: phase, Job: job})
	st := r.exec(script, phase, shell, stopped)
	st.Phase, st.Job = phase, job
	if more {
		r.em.Hold(protocol.TypeStatus, st)
	} else {
		r.em.Record(protocol.TypeStatus, st)
	}
	return st
}

func (r *runner) exec(script, phase, shell string, stopped func() string) protocol.Status {
	st := protocol.Status{Script: script}
	if code, msg := checkScript(script); code != 0 {
		st.CommandExitCode, st.Error = code, msg
		return st
	}
	prog, argv, code, msg := r.argv(script, shell)
	if code != 0 {
		st.CommandExitCode, st.Error = code, msg
		return st
	}
	out, childOut, err := r.outputPipe()
	if err != nil {
		st.CommandExitCode, st.Error = codeCannotExecute, err.Error()
		return st
	}
	devnull, err := r.scriptStdin()
	if err != nil {
		out.Close()
		childOut.Close()
		st.CommandExitCode, st.Error = codeCannotExecute, err.Error()
		return st
	}
	sys := &syscall.SysProcAttr{Setpgid: true}
	if r.cfg.TTY {
		sys = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 1}
	}
	attr := &syscall.ProcAttr{
		Env:   r.env,
		Files: []uintptr{devnull.Fd(), childOut.Fd(), childOut.Fd()},
		Sys:   sys,
	}
	p := &process{script: script, phase: phase, done: make(chan struct{})}
	oomBefore, oomKnown := r.mem.oomKills()
	start := time.Now()
	var exited <-chan reaper.Exit
	r.mu.Lock()
	if reason := stopped(); reason != "" {
		r.mu.Unlock()
		childOut.Close()
		out.Close()
		st.CommandExitCode, st.Error = 130, reason+" before the script started"
		return st
	}
	p.pgid, exited, err = r.reaper.Start(func() (int, error) {
		return syscall.ForkExec(prog, argv, attr)
	})
	if err == nil {
		r.current = p
	}
	r.mu.Unlock()
	childOut.Close()
	if err != nil {
		out.Close()
		st.CommandExitCode, st.Error = codeCannotExecute, fmt.Sprintf("start %s: %v", strings.Join(argv, " "), err)
		return st
	}

	pumped := make(chan struct{})
	go func() {
		pump(out, r.em, r.cfg.FlushDelay, r.masks.current())
		close(pumped)
	}()
	exit := <-exited
	close(p.done)
	r.mu.Lock()
	r.current = nil
	r.mu.Unlock()
	st.DurationMS = time.Since(start).Milliseconds()
	st.CommandExitCode, st.Signal = exitCode(exit.Status)
	st.Error = p.stopReason()
	// 137: SIGKILL ended the script, or (a shell's pipeline) the command
	// it reports on.
	if oomKnown && st.CommandExitCode == 128+int(syscall.SIGKILL) {
		if n, ok := r.mem.oomKills(); ok && n > oomBefore {
			st.OOMKilled, st.MemoryLimit = true, r.mem.limit()
		}
	}

	r.drain(p, out, pumped)
	return st
}

// drain waits for the rest of the script's output. Background children
// that inherited the output keep it open; after the drain timeout the
// status is written anyway and their output keeps flowing as it comes
// (or the group is killed with --kill-leftovers).
func (r *runner) drain(p *process, out *os.File, pumped chan struct{}) {
	select {
	case <-pumped:
	default:
		t := time.NewTimer(r.cfg.DrainTimeout)
		select {
		case <-pumped:
		case <-t.C:
			r.log.Info("background processes still hold the script's output open; continuing", "script", p.script, "pgid", p.pgid, "drain_timeout", r.cfg.DrainTimeout)
		}
		t.Stop()
	}
	if r.cfg.KillLeftovers {
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		select {
		case <-pumped:
		case <-time.After(time.Second):
			out.Close() // a child that left the group still holds it
		}
	}
	select {
	case <-pumped:
		out.Close()
	default:
		go func() {
			<-pumped
			out.Close()
		}()
	}
}

// scriptStdin returns /dev/null, opened once for every script.
func (r *runner) scriptStdin() (*os.File, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.devnull == nil {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, fmt.Errorf("open %s for the script's stdin: %w", os.DevNull, err)
		}
		r.devnull = f
	}
	return r.devnull, nil
}

// outputPipe returns the shim's read end and the script's write end. Only
// the read end is registered with Go's poller (the pump's flush deadline
// needs it); the write end is closed right after the fork, and registering
// it would cost two more epoll calls per script.
func (r *runner) outputPipe() (*os.File, *os.File, error) {
	if r.cfg.TTY {
		return openPty()
	}
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, fmt.Errorf("create output pipe: %w", os.NewSyscallError("pipe2", err))
	}
	if err := syscall.SetNonblock(p[0], true); err != nil {
		syscall.Close(p[0])
		syscall.Close(p[1])
		return nil, nil, fmt.Errorf("create output pipe: %w", os.NewSyscallError("fcntl", err))
	}
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}
