package shim

import (
	"fmt"
	"syscall"

	"github.com/tether-ci/tether/protocol"
)

// starter starts scripts. It is the engine's only way to create a process:
// the shim's runner forks real ones, tests give the engine fakes whose exit
// they control.
type starter interface {
	// start starts one script. A script that cannot start (missing, not
	// readable, no interpreter, fork failed) returns a *startError.
	start(sc scriptStart) (proc, error)
}

// scriptStart is one script the engine asks a starter to run.
type scriptStart struct {
	// path is the script's absolute path in the container.
	path string
	// shell runs the script whatever its "#!" line ("" = the shim's choice).
	shell string
	// masks are the values replaced in its output (nil = none).
	masks *maskSet
	// argv, when set, is a program run directly instead of a script
	// (a job command's argv): path is then its argv[0].
	argv []string
	// env are the job's own variables (env_file), on top of the shim's
	// environment for scripts.
	env []string
	// stderr gives the script's stderr a pipe of its own, sent in stderr
	// records (the command's "stderr":"separate"); else it shares the
	// stdout pipe.
	stderr bool
}

// proc is a started script.
type proc interface {
	// signal sends sig to the script's process group and reports whether
	// its main process still ran; once that exited it does nothing.
	signal(sig syscall.Signal) bool
	// wait blocks until the script exited and its output is drained, and
	// returns its exit code, signal, duration and out-of-memory facts (the
	// engine fills in the rest of the status).
	wait() protocol.Status
}

// startError is a script that could not start: the code a shell would
// report for it and why.
type startError struct {
	code int
	msg  string
}

func (e *startError) Error() string { return fmt.Sprintf("%s (status %d)", e.msg, e.code) }
