package shim

import (
	"os"
	"os/signal"
	"syscall"
)

// forwarded are the signals passed on to the running script's process
// group. SIGTERM also ends the shim (forward, grace, exit).
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// Signals subscribes to the signals the shim handles. The job-control
// signals that would otherwise stop it (SIGTSTP, SIGTTIN, SIGTTOU) and
// SIGPIPE (a failed write is handled as an error instead) are caught and
// dropped. They are deliberately not ignored with signal.Ignore: an ignored
// disposition survives exec, so every script would inherit it (`yes | head`
// would never end by SIGPIPE). Only the listed signals are subscribed: a
// bare signal.Notify would also catch SIGURG (Go preemption) and SIGCHLD
// (the reaper's).
func Signals() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 8)
	signal.Notify(ch, forwarded...)
	dropped := make(chan os.Signal, 8)
	signal.Notify(dropped, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGPIPE)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-dropped:
			case <-done:
				return
			}
		}
	}()
	return ch, func() {
		signal.Stop(ch)
		signal.Stop(dropped)
		close(done)
	}
}

// setSubreaper makes the process adopt orphaned descendants when it is not
// PID 1 (for example in a pod with a shared process namespace), so the
// reaper can reap them.
func setSubreaper() error {
	const prSetChildSubreaper = 36
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		return e
	}
	return nil
}
