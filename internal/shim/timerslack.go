package shim

import (
	"syscall"
	"time"
)

// monitorSlack is the timer slack the serving shim's threads get when it
// starts itself again (startWithOneP). The Go runtime's monitor thread
// (sysmon) sleeps 20 µs at a time, dozens of times a millisecond, whenever
// the shim is not idle: between two scripts (reaping one, writing its
// records, forking the next and waiting for its exec) that was 4 to 10
// wake-ups per script, a third of the shim's CPU per script. With 1 ms of
// slack the kernel may join those wake-ups to others for up to 1 ms, and the
// monitor mostly sleeps through a script's start. The shim's own timers (the
// flush delay, 20 ms by default; drain, grace and TTL in seconds) fire at
// most 1 ms late. Scripts never inherit it: each is forked by a thread set
// back to the slack the shim was started with (runner.start).
const monitorSlack = time.Millisecond

// threadTimerSlack returns the calling thread's timer slack.
func threadTimerSlack() time.Duration {
	r, _, _ := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_GET_TIMERSLACK, 0, 0)
	return time.Duration(r)
}

// setThreadTimerSlack sets the calling thread's timer slack; threads it
// creates and programs it executes inherit it.
func setThreadTimerSlack(d time.Duration) {
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_TIMERSLACK, uintptr(d), 0)
}
