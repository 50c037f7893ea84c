package shim_test

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-ci/tether/internal/testing/syncbuf"
	"github.com/tether-ci/tether/protocol"
)

// 1000 orphaned descendants of depths 2 to 4 are reaped by the shim as
// PID 1: none is left as a zombie, and none is left at all once they end.
func TestReapsOrphansOfAnyDepth(t *testing.T) {
	dir := t.TempDir()
	s := script(t, dir, "orphans.sh", `
TETHER_TEST_HELPER=spawn-orphans "$TETHER_TEST_BIN" 980 1
TETHER_TEST_HELPER=spawn-orphans "$TETHER_TEST_BIN" 10 2
TETHER_TEST_HELPER=spawn-orphans "$TETHER_TEST_BIN" 10 3
echo spawned
`)
	p := startShim(t, []string{"--drain-timeout", "100ms"})
	p.send(run(s))
	if st := p.waitStatus(s, 60*time.Second); st.CommandExitCode != 0 {
		t.Fatalf("orphan script failed: %+v", st)
	}
	// Wait until only the 1000 sleeps are left: a helper of depth 2 or 3
	// still alive may start its sleep after the list was read, and a sleep
	// no signal reached would outlive the test.
	var orphans map[int]string
	eventually(t, 60*time.Second, "exactly the 1000 orphaned sleeps under the shim", func() bool {
		orphans = descendants(t, p.pid())
		if len(orphans) != 1000 {
			return false
		}
		for pid := range orphans {
			if comm(pid) != "sleep" {
				return false
			}
		}
		return true
	})
	for pid := range orphans {
		_ = syscall.Kill(pid, syscall.SIGTERM) // they end; only the shim can reap them
	}
	eventually(t, 30*time.Second, "every orphan to end and be reaped", func() bool {
		return len(descendants(t, p.pid())) == 0
	})
	p.stdin.Close()
	if code, x := p.waitExit(5 * time.Second); code != 0 || x.Reason != protocol.ReasonStdinEOF {
		t.Fatalf("exit %d %+v, want 0 stdin-eof", code, x)
	}
}

// Zombies never accumulate while the script runs: the orphans it made are
// reaped while it still runs (it never ends by itself; the test's cleanup
// kills the shim). How soon is not asserted (a loaded machine delays the
// reaper); that every one is, before the script ends, is.
func TestNoZombiesWhileRunning(t *testing.T) {
	dir := t.TempDir()
	s := script(t, dir, "churn.sh", `
i=0
while [ $i -lt 300 ]; do ( true & ) ; i=$((i+1)); done
echo ready
sleep 3600
`)
	p := startShim(t, nil)
	p.send(run(s))
	p.waitRecord(0, 30*time.Second, func(r rec) bool { return r.Type.IsOutput() && string(r.Payload) == "ready\n" })
	eventually(t, 30*time.Second, "the orphans to be reaped while the script runs", func() bool {
		zombies := 0
		for _, st := range descendants(t, p.pid()) {
			if st == "Z" {
				zombies++
			}
		}
		return zombies == 0
	})
	select {
	case <-p.exited:
		t.Fatal("the shim exited while its script was running")
	default:
	}
}

// Forwarded signals reach the whole process group of the running script:
// the script itself and a background child that prints every signal. The
// script waits in the wait builtin, which a trapped signal interrupts at
// once to run the trap: bash waiting for a foreground command skips its
// SIGINT trap when that command did not die of the signal (it had just
// ended), which a loaded machine makes frequent.
func TestSignalsReachTheScriptGroup(t *testing.T) {
	dir := t.TempDir()
	s := script(t, dir, "sigs.sh", `
for s in HUP INT QUIT USR1 USR2; do trap "echo parent got $s" $s; done
TETHER_TEST_HELPER=print-signals "$TETHER_TEST_BIN" child &
while :; do sleep 0.2 & wait $!; done
`)
	p := startShim(t, nil)
	p.send(run(s))
	p.waitRecord(0, 30*time.Second, func(r rec) bool { return string(r.Payload) == "child ready\n" })
	names := map[syscall.Signal]string{syscall.SIGHUP: "HUP", syscall.SIGINT: "INT", syscall.SIGQUIT: "QUIT", syscall.SIGUSR1: "USR1", syscall.SIGUSR2: "USR2"}
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2} {
		p.signal(sig)
		for _, who := range []string{"parent", "child"} {
			want := fmt.Sprintf("%s got %s\n", who, names[sig])
			p.waitRecord(0, 30*time.Second, func(r rec) bool { return string(r.Payload) == want })
		}
	}
}

// SIGTSTP, SIGTTIN and SIGTTOU never stop the shim.
func TestJobControlSignalsDoNotStopTheShim(t *testing.T) {
	dir := t.TempDir()
	s := script(t, dir, "hi.sh", "echo hi\n")
	p := startShim(t, nil)
	for _, sig := range []syscall.Signal{syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU} {
		p.signal(sig)
	}
	time.Sleep(100 * time.Millisecond)
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid()))
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(string(data)[strings.LastIndexByte(string(data), ')')+1:]); f[0] == "T" {
		t.Fatal("the shim is stopped")
	}
	p.send(run(s))
	if st := p.waitStatus(s, 5*time.Second); st.CommandExitCode != 0 {
		t.Fatalf("status %+v", st)
	}
}

// Exit codes 0..255 map to themselves; a signal N maps to 128+N with its name.
func TestExitCodeMapping(t *testing.T) {
	dir := t.TempDir()
	p := startShim(t, nil)
	var cmds []protocol.Command
	for n := 0; n <= 255; n++ {
		cmds = append(cmds, run(script(t, dir, fmt.Sprintf("exit%d.sh", n), fmt.Sprintf("exit %d\n", n))))
	}
	p.send(cmds...)
	for n := 0; n <= 255; n++ {
		st := p.waitStatus(cmds[n].Script, 30*time.Second)
		if st.CommandExitCode != n || st.Signal != "" {
			t.Errorf("exit %d: got code %d signal %q", n, st.CommandExitCode, st.Signal)
		}
	}
	signals := map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "SIGKILL": syscall.SIGKILL, "SIGINT": syscall.SIGINT,
		"SIGHUP": syscall.SIGHUP, "SIGSEGV": syscall.SIGSEGV, "SIGABRT": syscall.SIGABRT, "SIGUSR1": syscall.SIGUSR1, "SIGPIPE": syscall.SIGPIPE}
	for name, sig := range signals {
		path := script(t, dir, "kill"+name+".sh", fmt.Sprintf("trap - %s; kill -s %s $$; sleep 5\n", strings.TrimPrefix(name, "SIG"), strings.TrimPrefix(name, "SIG")))
		p.send(run(path))
		st := p.waitStatus(path, 10*time.Second)
		if st.CommandExitCode != 128+int(sig) || st.Signal != name {
			t.Errorf("%s: got code %d signal %q, want %d %s", name, st.CommandExitCode, st.Signal, 128+int(sig), name)
		}
	}
}

// Not PID 1 (a shared process namespace): the shim makes itself a child
// subreaper, so orphans are re-parented to it and reaped by it.
func TestSubreaperWhenNotPID1(t *testing.T) {
	dir := t.TempDir()
	s := script(t, dir, "orphan.sh", "sleep 30 >/dev/null 2>&1 &\necho $!\n")
	cmd := exec.Command(shimBin)
	stdin, _ := cmd.StdinPipe()
	var out syncbuf.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	fmt.Fprintln(stdin, s)
	var orphan int
	eventually(t, 10*time.Second, "the orphan's pid", func() bool {
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(line, "o ") {
				f := strings.Fields(line)
				orphan, _ = strconv.Atoi(f[len(f)-1])
			}
		}
		return orphan > 0
	})
	eventually(t, 5*time.Second, "the orphan to be re-parented to the shim", func() bool {
		_, ok := descendants(t, cmd.Process.Pid)[orphan]
		return ok
	})
	syscall.Kill(orphan, syscall.SIGKILL)
	eventually(t, 5*time.Second, "the orphan to be reaped by the shim", func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", orphan))
		return err != nil
	})
}
