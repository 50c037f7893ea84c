// Package startgc holds Go's garbage collector off while a program starts:
// its init turns the collector off (with a memory limit as the safety
// net), and Restore turns it back on. A program imports it from main so
// that its init runs before most packages' inits: the tether CLI's
// package initialisation allocates about 3 MiB, almost all of it garbage
// or kept for the process's life, and the one collection it would cause
// (with its mark workers' start and the page faults of their first
// touches) costs a short command more than the heap it would free.
//
// GOGC and GOMEMLIMIT set in the environment win: with either set,
// nothing is changed.
package startgc

import (
	"math"
	"os"
	"runtime/debug"
)

// Limit is the memory limit while the collector is off: a start that
// allocates this much collects as usual.
const Limit = 64 << 20

// chosen reports whether the environment chose the collector's settings.
func chosen() bool {
	return os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != ""
}

func init() {
	if chosen() {
		return
	}
	debug.SetMemoryLimit(Limit)
	debug.SetGCPercent(-1)
}

// Restore turns the collector back on with Go's defaults (GOGC=100, no
// memory limit), unless the environment chose its settings. Call it once
// the start is over; calling it again does nothing more.
func Restore() {
	if chosen() {
		return
	}
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
}
