package shim

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tether-ci/tether/internal/reaper"
	"github.com/tether-ci/tether/protocol"
)

// runner is the shim's starter: each script in its own process group,
// stdin /dev/null, stdout and stderr on one pipe (or a pty) pumped to the
// emitter, or stderr on a pipe of its own when the command asked for it
// (not under --tty: a terminal is one stream). It keeps no state about what runs: the engine owns that.
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

	// oom reads the memory cgroup's OOM-kill counter, to report
	// out-of-memory kills.
	oom *oomCounter

	devnull *os.File // every script's stdin, opened once by the first start
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

// process is a script the runner started.
type process struct {
	r         *runner
	script    string
	pgid      int
	exited    <-chan reaper.Exit
	outs      []*os.File    // the shim's ends of the script's output (stdout, then a separate stderr)
	pumped    chan struct{} // closed when every output reached its end
	started   time.Time
	oomBefore uint64
	oomKnown  bool
	// gone is set once the main process exited: its group may be empty
	// and its ID reused, so it is signalled no more.
	gone atomic.Bool
}

// signal sends sig to the script's process group while its main process
// lives.
func (p *process) signal(sig syscall.Signal) bool {
	if p.gone.Load() {
		return false
	}
	_ = syscall.Kill(-p.pgid, sig)
	return true
}

// wait waits for the script's exit and the end of its output (see drain).
func (p *process) wait() protocol.Status {
	exit := <-p.exited
	p.gone.Store(true)
	st := protocol.Status{DurationMS: time.Since(p.started).Milliseconds()}
	st.CommandExitCode, st.Signal = exitCode(exit.Status)
	// 137: SIGKILL ended the script, or (a shell's pipeline) the command
	// it reports on.
	if p.oomKnown && st.CommandExitCode == 128+int(syscall.SIGKILL) {
		if n, ok := p.r.oom.read(); ok && n > p.oomBefore {
			st.OOMKilled, st.MemoryLimit = true, p.r.oom.limit()
		}
	}
	p.r.drain(p, p.outs, p.pumped)
	return st
}

// start starts a script; see starter.
func (r *runner) start(sc scriptStart) (proc, error) {
	prog, argv, code, msg := r.command(sc)
	if code != 0 {
		return nil, &startError{code: code, msg: msg}
	}
	out, childOut, err := r.outputPipe()
	if err != nil {
		return nil, &startError{code: codeCannotExecute, msg: err.Error()}
	}
	outs, childErr := []*os.File{out}, childOut
	if sc.stderr && !r.cfg.TTY {
		errOut, childErrEnd, err := newOutputPipe()
		if err != nil {
			out.Close()
			childOut.Close()
			return nil, &startError{code: codeCannotExecute, msg: err.Error()}
		}
		outs, childErr = append(outs, errOut), childErrEnd
	}
	closeAll := func() {
		for _, f := range outs {
			f.Close()
		}
	}
	closeChild := func() {
		childOut.Close()
		if childErr != childOut {
			childErr.Close()
		}
	}
	devnull, err := r.scriptStdin()
	if err != nil {
		closeAll()
		closeChild()
		return nil, &startError{code: codeCannotExecute, msg: err.Error()}
	}
	sys := &syscall.SysProcAttr{Setpgid: true}
	if r.cfg.TTY {
		sys = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 1}
	}
	attr := &syscall.ProcAttr{
		Env:   withEnv(r.env, sc.env),
		Files: []uintptr{devnull.Fd(), childOut.Fd(), childErr.Fd()},
		Sys:   sys,
	}
	p := &process{r: r, script: sc.path, outs: outs, pumped: make(chan struct{})}
	p.oomBefore, p.oomKnown = r.oom.read()
	p.started = time.Now()
	p.pgid, p.exited, err = r.reaper.Start(func() (int, error) {
		if slack := r.cfg.ScriptTimerSlack; slack > 0 {
			// The child inherits the forking thread's slack: this
			// thread's, set back to what the shim was started with.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			setThreadTimerSlack(slack)
		}
		return syscall.ForkExec(prog, argv, attr)
	})
	closeChild()
	if err != nil {
		closeAll()
		return nil, &startError{code: codeCannotExecute, msg: fmt.Sprintf("start %s: %v", strings.Join(argv, " "), err)}
	}
	if len(outs) == 1 {
		go func() {
			pump(out, r.em, r.cfg.FlushDelay, sc.masks, stdoutStream)
			close(p.pumped)
		}()
		return p, nil
	}
	var wg sync.WaitGroup
	for i, f := range outs {
		s := stdoutStream
		if i > 0 {
			s = stderrStream
		}
		wg.Go(func() { pump(f, r.em, r.cfg.FlushDelay, sc.masks, s) })
	}
	go func() {
		wg.Wait()
		close(p.pumped)
	}()
	return p, nil
}

// drain waits for the rest of the script's output. Background children
// that inherited the output keep it open; after the drain timeout the
// status is written anyway and their output keeps flowing as it comes
// (or the group is killed with --kill-leftovers).
func (r *runner) drain(p *process, outs []*os.File, pumped chan struct{}) {
	closeAll := func() {
		for _, f := range outs {
			f.Close()
		}
	}
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
			closeAll() // a child that left the group still holds it
		}
	}
	select {
	case <-pumped:
		closeAll()
	default:
		go func() {
			<-pumped
			closeAll()
		}()
	}
}

// scriptStdin returns /dev/null, opened once for every script.
func (r *runner) scriptStdin() (*os.File, error) {
	if r.devnull == nil {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, fmt.Errorf("open %s for the script's stdin: %w", os.DevNull, err)
		}
		r.devnull = f
	}
	return r.devnull, nil
}

// childEnd is the script's end of its output: passed to the child, then
// closed by the shim.
type childEnd interface {
	Fd() uintptr
	Close() error
}

// rawFd is a descriptor the shim only hands to a child and closes. Unlike
// an os.File it costs no fcntl to find its mode and no finalizer.
type rawFd int

// Fd returns the descriptor.
func (f rawFd) Fd() uintptr { return uintptr(f) }

// Close closes the descriptor.
func (f rawFd) Close() error { return syscall.Close(int(f)) }

// outputPipe returns the shim's read end and the script's write end. Only
// the read end is an os.File registered with Go's poller (the pump's flush
// deadline needs it); the write end stays a bare descriptor, closed right
// after the fork: registering it would cost two more epoll calls per
// script.
func (r *runner) outputPipe() (*os.File, childEnd, error) {
	if r.cfg.TTY {
		return openPty()
	}
	return newOutputPipe()
}

// newOutputPipe returns the shim's read end (non-blocking, on Go's poller)
// and the script's write end of a new output pipe.
func newOutputPipe() (*os.File, childEnd, error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, fmt.Errorf("create output pipe: %w", os.NewSyscallError("pipe2", err))
	}
	// The new read end has no status flag but O_RDONLY, which F_SETFL
	// keeps: one fcntl instead of syscall.SetNonblock's two.
	if _, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(p[0]), syscall.F_SETFL, syscall.O_NONBLOCK); e != 0 {
		syscall.Close(p[0])
		syscall.Close(p[1])
		return nil, nil, fmt.Errorf("create output pipe: %w", os.NewSyscallError("fcntl", e))
	}
	return os.NewFile(uintptr(p[0]), "|0"), rawFd(p[1]), nil
}
