package shim

import (
	"sync"
	"syscall"

	"github.com/tether-ci/tether/protocol"
)

// item is one queued unit of work: a single script (run command or plain
// path) or a job.
type item struct {
	cmd protocol.Command

	mu          sync.Mutex
	cancelled   bool   // a cancel arrived: skip the remaining main scripts
	cancelAfter bool   // a cancel arrived during (or before) the after-scripts
	halt        string // the shim is exiting: stop everything, write no job record
	expired     string // the deadline passed: no more main scripts, the after-scripts still run, no job record
	phase       string
}

// stopMain returns why a main script must not start ("" = go ahead).
func (it *item) stopMain() string {
	it.mu.Lock()
	defer it.mu.Unlock()
	switch {
	case it.halt != "":
		return it.halt
	case it.cancelled:
		return "cancelled by the client"
	case it.expired != "":
		return it.expired
	}
	return ""
}

// expire marks the item's deadline as passed: the remaining main scripts
// are skipped, the after-scripts still run, and no job record is written
// (the final record says why the job ended).
func (it *item) expire(reason string) {
	it.mu.Lock()
	it.expired = reason
	it.mu.Unlock()
}

// stopAfter returns why an after-script must not start.
func (it *item) stopAfter() string {
	it.mu.Lock()
	defer it.mu.Unlock()
	switch {
	case it.halt != "":
		return it.halt
	case it.cancelAfter:
		return "cancelled by the client"
	}
	return ""
}

func (it *item) setPhase(p string) {
	it.mu.Lock()
	it.phase = p
	it.mu.Unlock()
}

// cancel marks the item cancelled and reports whether its after-scripts
// are cancelled too (a second cancel, or a cancel during the after-scripts):
// then the running script stops whatever its phase, else only a main script.
func (it *item) cancel(queued bool) bool {
	it.mu.Lock()
	defer it.mu.Unlock()
	if queued {
		it.cancelled, it.cancelAfter = true, true
		return true
	}
	if it.phase == "after" || it.cancelled {
		it.cancelAfter = true
	}
	it.cancelled = true
	return it.cancelAfter
}

func (it *item) setHalt(reason string) {
	it.mu.Lock()
	it.halt = reason
	it.mu.Unlock()
}

// halted reports whether the job ended without a job record: the shim is
// exiting, or the deadline passed.
func (it *item) halted() bool {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.halt != "" || it.expired != ""
}

// execute runs the item and returns its exit code. It writes the begin and
// status records of every script and, for a job, the job record.
func (s *Shim) execute(it *item) int {
	c := it.cmd
	if c.Cmd == protocol.CmdRun {
		it.setPhase("script")
		return s.runner.run(c.Script, "script", "", c.Shell, it.stopMain, false).CommandExitCode
	}
	done := protocol.JobDone{Job: c.ID}
	it.setPhase("script")
	for _, script := range c.Scripts {
		if it.stopMain() != "" {
			break
		}
		st := s.runner.run(script, "script", c.ID, c.Shell, it.stopMain, true)
		if st.CommandExitCode != 0 {
			done.ExitCode, done.FailedScript = st.CommandExitCode, script
			break
		}
	}
	it.setPhase("after")
	for _, script := range c.After {
		if it.stopAfter() != "" {
			break
		}
		s.runner.run(script, "after", c.ID, c.Shell, it.stopAfter, true)
	}
	it.mu.Lock()
	done.Cancelled = it.cancelled
	it.mu.Unlock()
	if done.Cancelled && done.ExitCode == 0 {
		done.ExitCode = 128 + int(syscall.SIGTERM)
	}
	for _, err := range removeFiles(s.cfg.FilesDir, c.Remove) {
		s.log.Warn("cannot remove a delivered file after its job", "err", err)
	}
	if it.halted() {
		return done.ExitCode
	}
	s.em.Record(protocol.TypeJob, done)
	return done.ExitCode
}
