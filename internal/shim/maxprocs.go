package shim

import (
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// onePEnv marks a shim that started itself again with GOMAXPROCS=1 set for
// its runtime only (startWithOneP); its value is the timer slack, in
// nanoseconds, the shim was started with.
const onePEnv = "TETHER_SHIM_ONE_P"

// startWithOneP makes the serving shim run with one P from its runtime's
// start. The shim relays one script at a time, and the Go runtime sets up
// per-P state (the P, its allocation cache, its spans) for every CPU before
// main runs, which runtime.GOMAXPROCS(1) afterwards does not give back: on
// a 64-CPU node about 1.2 MiB of the idle shim's RSS, against a budget of
// 4 MiB. So where GOMAXPROCS is unset and the runtime started with more
// than one P (startPs), the shim executes itself again (same PID, same
// arguments and open files) with GOMAXPROCS=1 and onePEnv set, and the
// started-again shim removes both from its environment, so scripts inherit
// the environment the shim was given.
//
// The started-again runtime's threads also start with monitorSlack as their
// timer slack (it survives exec, and a thread passes it to the threads it
// creates: the runtime's monitor thread is created before main runs). The
// slack the shim was started with travels in onePEnv and is returned as
// scriptSlack: every script is forked with it.
//
// It returns true in the started-again shim, false where the shim goes on
// as it started: GOMAXPROCS set by the user (the shim and its scripts keep
// it), one P from the start, args not the process's own (Main called by a
// test), or the exec failed (no /proc, say; Main already lowered
// GOMAXPROCS). scriptSlack is 0 where the slack was not changed.
func startWithOneP(args []string, startPs int) (startedAgain bool, scriptSlack time.Duration) {
	if v, ok := os.LookupEnv(onePEnv); ok {
		os.Unsetenv(onePEnv)
		os.Unsetenv("GOMAXPROCS")
		if ns, err := strconv.ParseInt(v, 10, 64); err == nil && ns > 0 {
			scriptSlack = time.Duration(ns)
		}
		return true, scriptSlack
	}
	if _, set := os.LookupEnv("GOMAXPROCS"); set || startPs == 1 || !slices.Equal(args, os.Args[1:]) {
		return false, 0
	}
	own := threadTimerSlack()
	env := append(os.Environ(), "GOMAXPROCS=1", onePEnv+"="+strconv.FormatInt(int64(own), 10))
	setThreadTimerSlack(monitorSlack)
	// Exec returns only on failure.
	_ = syscall.Exec("/proc/self/exe", os.Args, env)
	setThreadTimerSlack(own)
	return false, 0
}
