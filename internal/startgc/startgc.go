// Package startgc prepares Go's heap for a short program's start: its
// init turns the garbage collector off (with a memory limit as the safety
// net) and populates the heap's first chunk in one system call (Linux),
// and Restore turns the collector back on. A program imports it from main
// so that its init runs before most packages' inits: the tether CLI's
// package initialisation allocates about 3 MiB, almost all of it garbage
// or kept for the process's life; the one collection it would cause (with
// its mark workers' start and the page faults of their first touches)
// costs a short command more than the heap it would free, and the pages
// it touches one by one cost a page fault each (on a virtual machine an
// exit to the hypervisor, 20–60 µs on Tether's e2e node).
//
// GOGC and GOMEMLIMIT set in the environment win: with either set, the
// collector's settings are not changed. TETHER_HEAP_PREFAULT=0 (contract.HeapPrefaultVar) in the environment
// leaves the heap's pages to be faulted in one by one (for measuring).
package startgc

import (
	"math"
	"os"
	"runtime/debug"

	"github.com/tether-ci/tether/internal/contract"
)

// Limit is the memory limit while the collector is off: a start that
// allocates this much collects as usual.
const Limit = 64 << 20

// chosen reports whether the environment chose the collector's settings.
func chosen() bool {
	return os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != ""
}

func init() {
	if os.Getenv(contract.HeapPrefaultVar) != "0" {
		_ = prefaultHeap()
	}
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
