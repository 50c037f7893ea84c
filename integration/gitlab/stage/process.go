package stage

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tether-ci/tether/internal/sibling"
)

// Environment variables a stage process hands `tether gitlab run` when it
// falls back to it.
const (
	// ResumeVar holds "JOB FROM SKIP": the stage already began in the
	// shim as job JOB, its records start at stream offset FROM, and the
	// first SKIP bytes of its stdout were written already.
	ResumeVar = "TETHER_GITLAB_RESUME"
	// CancelledVar names the signal ("SIGTERM") the stage process received
	// before it fell back: the stage is cancelled at once.
	CancelledVar = "TETHER_GITLAB_CANCELLED"
	// FallbackVar is set ("1") for every `tether gitlab run` a stage
	// process falls back to: a run without it is the runner's run_exec
	// itself, whose job needs no agent.
	FallbackVar = "TETHER_GITLAB_FALLBACK"
)

// connectTimeout bounds the connection to the agent's socket.
const connectTimeout = 2 * time.Second

// Process is one stage as the runner's run_exec: it runs through the
// job's agent, or falls back to `tether gitlab run`.
type Process struct {
	// Args are the stage's arguments (`tether gitlab run`'s: flags, the
	// script, the stage).
	Args []string
	// Environ is the process's environment (KEY=VALUE).
	Environ []string
	// Dir is the working directory, sent to the agent.
	Dir string
	// Stdout and Stderr receive the stage's output.
	Stdout, Stderr io.Writer
	// Signals delivers SIGTERM and SIGINT: the first cancels the stage,
	// a second ends the process at once (Run returns 128+N).
	Signals <-chan os.Signal
	// Listen, when set, starts the delivery of signals to Signals: Run
	// calls it once the agent has the stage, so that the threads the Go
	// runtime starts for signals start while the agent works (before,
	// a signal ends the process, and the agent cancels the stage whose
	// process is gone).
	Listen func()
	// Fallback replaces the process with `tether gitlab run` and the same
	// arguments, with env as its environment; it returns only on failure.
	Fallback func(env []string) error
}

// getenv looks key up in p.Environ.
func (p *Process) getenv(key string) string {
	for i := len(p.Environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(p.Environ[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// Run runs the stage and returns its exit code.
//
// It reads the agent's frames on the calling goroutine with blocking
// system calls on the socket (no poller, no goroutine hand-off per
// frame): a stage process's time is mostly its start, and every thread,
// page and wake-up it spares counts. One goroutine waits for Signals: the
// first sends the agent a cancel frame, the second shuts the socket down,
// which ends the read, and Run returns 128+N.
func (p *Process) Run() int {
	conn, err := p.connect()
	if err != nil {
		return p.fallback(nil, "", 0)
	}
	defer conn.Close()
	if err := WriteEncoded(conn, FrameRequest, Request{Args: p.Args, Env: p.Environ, Dir: p.Dir}); err != nil {
		return p.fallback(nil, "", 0)
	}
	if p.Listen != nil {
		p.Listen()
	}
	sig := &signalState{}
	stop := make(chan struct{})
	defer close(stop)
	go sig.watch(p.Signals, stop, conn, p.Stderr)
	var started *Started
	var written int64
	for {
		typ, payload, err := ReadFrame(conn)
		if code, now := sig.exitNow(); now {
			return code
		}
		if err != nil {
			// The agent is gone before the stage ended.
			return p.fallback(started, sig.name(), written)
		}
		switch typ {
		case FrameStdout:
			n, _ := p.Stdout.Write(payload)
			written += int64(n)
		case FrameStderr:
			_, _ = p.Stderr.Write(payload)
		case FrameStarted:
			var s Started
			if s.UnmarshalBinary(payload) == nil && s.Job != "" {
				started = &s
			}
		case FrameDecline:
			if started == nil && written == 0 {
				return p.fallback(nil, sig.name(), 0)
			}
		case FrameExit:
			code, err := strconv.Atoi(string(payload))
			if err != nil {
				return p.fallback(started, sig.name(), written)
			}
			return code
		}
	}
}

// signalState is what the runner's signals did to a running stage: the
// first one's name (the stage was cancelled), and the exit code once a
// second one came.
type signalState struct {
	mu        sync.Mutex
	cancelled string
	code      int
}

// watch handles sigs until stop closes: the first signal cancels the
// stage over conn, the second shuts conn down for Run to return.
func (s *signalState) watch(sigs <-chan os.Signal, stop <-chan struct{}, conn *sock, stderr io.Writer) {
	for {
		var sig os.Signal
		select {
		case sig = <-sigs:
		case <-stop:
			return
		}
		name := signalName(sig)
		s.mu.Lock()
		first := s.cancelled == ""
		if first {
			s.cancelled = name
		} else {
			s.code = 128 + signalNumber(sig)
		}
		s.mu.Unlock()
		if !first {
			_, _ = io.WriteString(stderr, "tether: "+name+" again: exiting now\n")
			conn.shutdown()
			return
		}
		_, _ = io.WriteString(stderr, "tether: "+name+": cancelling the job (signal again to exit at once)\n")
		_ = WriteFrame(conn, FrameCancel, []byte(name))
	}
}

// name is the first signal's name, "" before one came.
func (s *signalState) name() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancelled
}

// exitNow is the exit code once a second signal came.
func (s *signalState) exitNow() (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.code, s.code != 0
}

// connect reaches the job's agent, when its directory is private.
func (p *Process) connect() (*sock, error) {
	dir, err := Dir(p.getenv)
	if err != nil {
		return nil, err
	}
	if err := CheckDir(dir); err != nil {
		return nil, err
	}
	return dialUnix(filepath.Join(dir, SocketName), connectTimeout)
}

// fallback runs the stage with `tether gitlab run`: from its start when
// the agent never began it (started nil), else resuming the agent's job
// after the written bytes of stdout.
func (p *Process) fallback(started *Started, cancelled string, written int64) int {
	env := append(append([]string(nil), p.Environ...), FallbackVar+"=1")
	if started != nil {
		env = append(env, fmt.Sprintf("%s=%s %d %d", ResumeVar, started.Job, started.From, written))
	}
	if cancelled != "" {
		env = append(env, CancelledVar+"="+cancelled)
	}
	err := p.Fallback(env)
	fmt.Fprintf(p.Stderr, "ERROR: tether: the stage could not run `tether gitlab run`: %v\n", err)
	code, cerr := strconv.Atoi(p.getenv("SYSTEM_FAILURE_EXIT_CODE"))
	if cerr != nil {
		return 1
	}
	return code
}

// ExecTether is a Process's Fallback: it replaces the process with the
// `tether` binary beside this one (else the one on PATH) running `gitlab
// run` with args.
func ExecTether(args []string) func(env []string) error {
	return func(env []string) error {
		bin, err := findTether()
		if err != nil {
			return err
		}
		argv := append([]string{bin, "gitlab", "run"}, args...)
		return syscall.Exec(bin, argv, env)
	}
}

// findTether is the tether binary beside the running one, else on PATH.
func findTether() (string, error) {
	bin, err := sibling.Find("tether")
	if err != nil {
		return "", fmt.Errorf("no tether binary beside tether-stage nor on PATH: install both side by side (%w)", err)
	}
	return bin, nil
}

// signalName is "SIGTERM" for SIGTERM, as `tether` names signals.
func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

func signalNumber(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return int(s)
	}
	return 0
}
