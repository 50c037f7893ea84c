package startgc

import (
	"math"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// The collector is off (with the memory limit) from init until Restore,
// and on with Go's defaults after it; GOGC or GOMEMLIMIT in the
// environment leave both alone. Each case runs in a child process, whose
// init sees the environment the case sets.
func TestInitAndRestore(t *testing.T) {
	if os.Getenv("STARTGC_CHILD") == "1" {
		report := func(when string) {
			gc := debug.SetGCPercent(-1)
			debug.SetGCPercent(gc)
			limit := debug.SetMemoryLimit(-1) // a negative limit reads it
			os.Stdout.WriteString(when + " " + strconv.Itoa(gc) + " " + limitText(limit) + "\n")
		}
		report("start")
		Restore()
		report("restored")
		return
	}
	for _, c := range []struct {
		env  []string
		want string
	}{
		{nil, "start -1 64MiB\nrestored 100 none\n"},
		{[]string{"GOGC=50"}, "start 50 none\nrestored 50 none\n"},
		{[]string{"GOMEMLIMIT=1GiB"}, "start 100 1024MiB\nrestored 100 1024MiB\n"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestInitAndRestore$")
		cmd.Env = append(append(clean(os.Environ()), "STARTGC_CHILD=1"), c.env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v", c.env, err)
		}
		got := strings.Join(slicesBefore(strings.SplitAfter(string(out), "\n"), "PASS"), "")
		if got != c.want {
			t.Errorf("%v: got %q, want %q", c.env, got, c.want)
		}
	}
}

func clean(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMEMLIMIT=") {
			out = append(out, kv)
		}
	}
	return out
}

func slicesBefore(lines []string, stop string) []string {
	for i, l := range lines {
		if strings.HasPrefix(l, stop) {
			return lines[:i]
		}
	}
	return lines
}

func limitText(l int64) string {
	if l == math.MaxInt64 {
		return "none"
	}
	return strconv.FormatInt(l>>20, 10) + "MiB"
}
