package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Config says how to start the shim.
type Config struct {
	// Shim is the tether-shim binary (see FindShim). Required.
	Shim string
	// Args are extra shim flags. Unless they (or Env) set a spool
	// directory, or MemoryReplay is set, Start adds --spool-dir with a
	// temporary directory it removes on Close, so the whole stream stays
	// replayable.
	Args []string
	// MemoryReplay makes the shim keep only its memory replay window
	// (--replay-bytes, MemoryReplayBytes unless Args or Env set it)
	// instead of a spool file, and
	// makes the shim's output wait in its pipe while no connection is
	// attached instead of being dropped as a real attach drops it. A
	// reconnecting session needs little more than the shim's stdout pipe
	// holds (the shim cannot get further ahead), and the
	// relay saves writing every record to a file: as much CPU as the rest
	// of the relay for a job that prints a lot. Cut still breaks the
	// connection. Used by tether run --local, whose connection is only
	// ever replaced when the session declares it stalled.
	MemoryReplay bool
	// Env is the shim's environment (and so the scripts'); nil inherits
	// this process's environment.
	Env []string
	// Stderr receives the shim's own diagnostics; nil discards them.
	Stderr io.Writer
	// StopTimeout is how long Close waits for the shim to exit after
	// SIGTERM before it kills it. Default 15s.
	StopTimeout time.Duration
}

// MemoryReplayBytes is the shim's memory replay window with
// Config.MemoryReplay: what a reconnect needs (the shim's 1 MiB stdout
// pipe, the write it was blocked in, the session's undecoded reads, the
// output written before the shim reads the resume command) several times
// over. The shim's ring only grows that big for a job that prints as much.
const MemoryReplayBytes = 16 << 20

// errCut is what a connection's Read returns after Cut.
var errCut = errors.New("local: connection cut")

// errConnClosed is what a connection returns after its Close.
var errConnClosed = errors.New("local: connection closed")

// Shim is a running tether-shim child process. It implements
// client.Transport.
type Shim struct {
	cmd         *exec.Cmd
	stdin       *os.File
	stopTimeout time.Duration
	spool       string // temporary spool directory to remove, or ""

	stdinMu sync.Mutex // one command write at a time

	relay

	pumpDone chan struct{} // closed when the shim's stdout ended
	exited   chan struct{} // closed when the process was reaped
	waitErr  error         // set before exited is closed

	closeOnce sync.Once
	closeErr  error
}

// Start starts the shim. ctx bounds only the start: the shim keeps running
// until it exits by itself or Close stops it (cancel a job through the
// session, not by killing the process).
func Start(ctx context.Context, cfg Config) (*Shim, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start shim: %w", err)
	}
	if cfg.Shim == "" {
		return nil, errors.New("start shim: Config.Shim is empty (use local.FindShim)")
	}
	s := &Shim{
		stopTimeout: cfg.StopTimeout,
		pumpDone:    make(chan struct{}),
		exited:      make(chan struct{}),
	}
	if s.stopTimeout <= 0 {
		s.stopTimeout = 15 * time.Second
	}
	args := append([]string{}, cfg.Args...)
	if cfg.MemoryReplay && !setsFlag(cfg.Args, cfg.Env, "replay-bytes") {
		args = append(args, "--replay-bytes="+strconv.Itoa(MemoryReplayBytes))
	}
	if !cfg.MemoryReplay && !setsFlag(cfg.Args, cfg.Env, "spool-dir") {
		dir, err := os.MkdirTemp("", "tether-spool-")
		if err != nil {
			return nil, fmt.Errorf("start shim: create its spool directory: %w", err)
		}
		s.spool = dir
		args = append(args, "--spool-dir="+dir)
	}
	cmd := exec.Command(cfg.Shim, args...)
	cmd.Env = cfg.Env
	cmd.Stderr = cfg.Stderr
	cmd.SysProcAttr = shimProcAttr()

	inR, inW, err := os.Pipe()
	if err != nil {
		s.removeSpool()
		return nil, fmt.Errorf("start shim: stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		s.removeSpool()
		return nil, fmt.Errorf("start shim: stdout pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	if err := cmd.Start(); err != nil {
		for _, f := range []*os.File{inR, inW, outR, outW} {
			f.Close()
		}
		s.removeSpool()
		return nil, fmt.Errorf("start shim %s: %w", cfg.Shim, err)
	}
	inR.Close()
	outW.Close()
	s.cmd, s.stdin = cmd, inW
	s.relay.init(outR, s.pumpDone, cfg.MemoryReplay)
	go s.discard()
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	return s, nil
}

// setsFlag reports whether the shim flags or environment set the shim
// flag name already.
func setsFlag(args, env []string, name string) bool {
	for _, a := range args {
		a = strings.TrimLeft(a, "-")
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	envName := "TETHER_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "="
	for _, e := range env {
		if strings.HasPrefix(e, envName) {
			return true
		}
	}
	return false
}

// Pid returns the shim's process ID.
func (s *Shim) Pid() int { return s.cmd.Process.Pid }

// Exited returns a channel that is closed when the shim process has exited.
func (s *Shim) Exited() <-chan struct{} { return s.exited }

// Wait waits for the shim to exit and returns its exit error (an
// *exec.ExitError for a non-zero exit).
func (s *Shim) Wait() error {
	<-s.exited
	return s.waitErr
}

// ExitCode returns the shim's exit code, or -1 while it runs or when a
// signal ended it.
func (s *Shim) ExitCode() int {
	select {
	case <-s.exited:
		return s.cmd.ProcessState.ExitCode()
	default:
		return -1
	}
}

// Close stops the shim if it still runs: it closes its stdin and sends it
// SIGTERM (the shim stops the running script and writes its final record),
// kills it after Config.StopTimeout, reaps it and removes the temporary
// spool directory. It returns an error only when the shim had to be killed
// or the cleanup failed.
func (s *Shim) Close() error {
	s.closeOnce.Do(func() {
		s.stopKeeping() // nobody reads the rest: it must not block the shim
		s.Cut()
		s.stdinMu.Lock()
		s.stdin.Close()
		s.stdinMu.Unlock()
		select {
		case <-s.exited:
		default:
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
			t := time.NewTimer(s.stopTimeout)
			select {
			case <-s.exited:
				t.Stop()
			case <-t.C:
				_ = s.cmd.Process.Kill()
				<-s.exited
				s.closeErr = fmt.Errorf("local shim (pid %d) did not exit within %s of SIGTERM and was killed", s.cmd.Process.Pid, s.stopTimeout)
			}
		}
		// A script's background child may still hold the shim's stdout.
		select {
		case <-s.pumpDone:
		case <-time.After(2 * time.Second):
		}
		if err := s.removeSpool(); err != nil && s.closeErr == nil {
			s.closeErr = err
		}
	})
	return s.closeErr
}

func (s *Shim) removeSpool() error {
	if s.spool == "" {
		return nil
	}
	if err := os.RemoveAll(s.spool); err != nil {
		return fmt.Errorf("remove the shim's spool directory: %w", err)
	}
	return nil
}
