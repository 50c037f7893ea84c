//go:build linux

package gitlab

import (
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The agent's process starts with agentTimerSlack, and the thread that
// started it keeps its own slack.
func TestAgentStartsWithTimerSlack(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "cat /proc/self/timerslack_ns")
	var out strings.Builder
	cmd.Stdout = &out
	if err := startDetached(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	got, err := strconv.ParseInt(strings.TrimSpace(out.String()), 10, 64)
	if err != nil || time.Duration(got) != agentTimerSlack {
		t.Fatalf("the started process's timer slack: %q (%v), want %d", out.String(), err, agentTimerSlack.Nanoseconds())
	}
	after, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil || after != before {
		t.Fatalf("the starting thread's slack: %d (%v), was %d", after, err, before)
	}
}

// The agent runs with GOGC agentGCPercent unless its environment sets
// GOGC.
func TestAgentGCPercent(t *testing.T) {
	own := debug.SetGCPercent(100)
	defer debug.SetGCPercent(own)
	tuneAgentGC(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != agentGCPercent {
		t.Fatalf("GOGC %d, want %d", got, agentGCPercent)
	}
	tuneAgentGC(func(k string) string {
		if k == "GOGC" {
			return "50"
		}
		return os.Getenv(k)
	})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GOGC %d with GOGC set in the environment, want it left alone (100)", got)
	}
}
