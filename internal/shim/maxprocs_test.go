package shim_test

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/protocol"
)

// withEnv replaces (or with value "" removes) one variable of the shim's
// environment.
func withEnv(name, value string) shimOpt {
	return func(c *exec.Cmd) {
		c.Env = slices.DeleteFunc(c.Env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
		if value != "" {
			c.Env = append(c.Env, name+"="+value)
		}
	}
}

// defaultPs is the P count a Go program starts with when GOMAXPROCS is
// unset here (the CPUs, or the cgroup's CPU limit).
func defaultPs() int {
	prev := runtime.GOMAXPROCS(0)
	runtime.SetDefaultGOMAXPROCS()
	n := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(prev)
	return n
}

// A shim whose runtime started with more than one P starts itself again
// with one (same PID, same arguments), and its scripts get the environment
// the shim was given: no GOMAXPROCS, no marker.
func TestShimStartsAgainWithOnePAndScriptsKeepTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	s := script(t, dir, "env.sh", "#!/bin/sh\necho \"GOMAXPROCS=[${GOMAXPROCS-unset}] marker=[${TETHER_SHIM_ONE_P-unset}]\"\n")
	args := []string{"--shell=/bin/sh", "--log-level=debug"}
	p := startShim(t, args, withEnv("GOMAXPROCS", ""))
	p.send(run(s))
	if st := p.waitStatus(s, 30*time.Second); st.CommandExitCode != 0 {
		t.Fatalf("script exit %d", st.CommandExitCode)
	}
	if got, want := string(p.output()), "GOMAXPROCS=[unset] marker=[unset]\n"; got != want {
		t.Errorf("script saw %q, want %q", got, want)
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid()) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00"), append([]string{shimBin}, args...); !slices.Equal(got, want) {
		t.Errorf("shim's command line %q, want %q", got, want)
	}
	p.stdin.Close()
	p.waitExit(30 * time.Second)
	p.mu.Lock()
	stderr := p.stderr.String()
	p.mu.Unlock()
	startedAgain := strings.Contains(stderr, `msg="started again with one P" GOMAXPROCS=1`)
	if want := defaultPs() > 1; startedAgain != want {
		t.Errorf("started again: %v, want %v (a Go program starts with %d Ps here); stderr:\n%s", startedAgain, want, defaultPs(), stderr)
	}
}

// GOMAXPROCS set by the user is the user's: the shim keeps it, and so do
// its scripts.
func TestShimKeepsTheUsersGOMAXPROCS(t *testing.T) {
	dir := t.TempDir()
	s := script(t, dir, "env.sh", "#!/bin/sh\necho \"GOMAXPROCS=[${GOMAXPROCS-unset}] marker=[${TETHER_SHIM_ONE_P-unset}]\"\n")
	p := startShim(t, []string{"--shell=/bin/sh", "--log-level=debug"}, withEnv("GOMAXPROCS", "3"))
	p.send(run(s))
	if st := p.waitStatus(s, 30*time.Second); st.CommandExitCode != 0 {
		t.Fatalf("script exit %d", st.CommandExitCode)
	}
	if got, want := string(p.output()), "GOMAXPROCS=[3] marker=[unset]\n"; got != want {
		t.Errorf("script saw %q, want %q", got, want)
	}
	p.stdin.Close()
	p.waitExit(30 * time.Second)
	p.mu.Lock()
	defer p.mu.Unlock()
	if strings.Contains(p.stderr.String(), "started again") {
		t.Errorf("the shim started itself again though the user set GOMAXPROCS; stderr:\n%s", p.stderr.String())
	}
}

// A shim that started itself again runs its own threads with a coarse timer
// slack (the runtime's monitor thread then wakes less often per script),
// but every script gets the slack the shim was started with.
func TestScriptsKeepTheTimerSlackTheShimWasStartedWith(t *testing.T) {
	dir := t.TempDir()
	s := script(t, dir, "slack.sh", "#!/bin/sh\ncat /proc/self/timerslack_ns\n")
	p := startShim(t, []string{"--shell=/bin/sh"}, withEnv("GOMAXPROCS", ""))
	p.waitRecord(0, 30*time.Second, func(r rec) bool { return r.Type == protocol.TypeHello })
	// Before any fork the main thread still has the slack it started
	// with (only /proc/PID/timerslack_ns, the main thread's, is readable).
	shimSlack, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid()) + "/timerslack_ns")
	if err != nil {
		t.Fatal(err)
	}
	own, err := os.ReadFile("/proc/self/timerslack_ns")
	if err != nil {
		t.Fatal(err)
	}
	want := string(own) // one P from the start: nothing changes
	if defaultPs() > 1 {
		want = strconv.Itoa(int(time.Millisecond)) + "\n"
	}
	if string(shimSlack) != want {
		t.Errorf("the shim's main thread has a timer slack of %q ns, want %q (a Go program starts with %d Ps here)", shimSlack, want, defaultPs())
	}
	from := 0
	for range 3 {
		p.send(run(s))
		_, i := p.waitRecord(from, 30*time.Second, func(r rec) bool { return r.Type == protocol.TypeStatus })
		from = i + 1
	}
	if got, want := string(p.output()), strings.Repeat(string(own), 3); got != want {
		t.Errorf("scripts' timer slack %q, want this test's %q each time", got, want)
	}
}
