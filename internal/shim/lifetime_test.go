package shim_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-ci/tether/protocol"
)

// notBefore checks that the shim did not exit before it was due. How late
// it exits is not asserted: a loaded machine delays it (make bench
// measures speed); that it exits for the reason due is.
func notBefore(t *testing.T, due, exited time.Time) {
	t.Helper()
	if early := due.Sub(exited); early > 100*time.Millisecond {
		t.Fatalf("exited %v before it was due", early)
	}
}

func TestDeadlineStopsTheScriptAndExits(t *testing.T) {
	dir := t.TempDir()
	s := script(t, dir, "long.sh", "echo started; sleep 3600; echo never\n")
	start := time.Now()
	p := startShim(t, []string{"--deadline", "1.5", "--grace", "5s"})
	p.send(run(s))
	code, x := p.waitExit(60 * time.Second)
	notBefore(t, start.Add(1500*time.Millisecond), time.Now())
	if code != 124 || x.Reason != protocol.ReasonDeadline {
		t.Fatalf("exit %d %+v, want 124 deadline", code, x)
	}
	st := p.waitStatus(s, time.Second)
	if st.Signal != "SIGTERM" || st.CommandExitCode != 143 || st.Error == "" {
		t.Fatalf("status %+v, want SIGTERM/143 with the reason", st)
	}
}

// A script that ignores SIGTERM is killed after the grace period.
func TestDeadlineKillsAfterGrace(t *testing.T) {
	dir := t.TempDir()
	s := script(t, dir, "stubborn.sh", "trap 'echo ignoring TERM' TERM; echo started; while :; do sleep 0.05; done\n")
	start := time.Now()
	p := startShim(t, []string{"--deadline", "1", "--grace", "500ms"})
	p.send(run(s))
	code, _ := p.waitExit(60 * time.Second)
	notBefore(t, start.Add(1500*time.Millisecond), time.Now())
	st := p.waitStatus(s, time.Second)
	if code != 124 || st.Signal != "SIGKILL" {
		t.Fatalf("exit %d status %+v, want 124 and SIGKILL", code, st)
	}
}

func TestDeadlineAsRFC3339(t *testing.T) {
	due := time.Now().Add(1200 * time.Millisecond)
	p := startShim(t, []string{"--deadline", due.UTC().Format(time.RFC3339Nano)})
	code, x := p.waitExit(60 * time.Second)
	notBefore(t, due, time.Now())
	if code != 124 || x.Reason != protocol.ReasonDeadline {
		t.Fatalf("exit %d %+v", code, x)
	}
}

func TestTTLAnnotationEndsTheShim(t *testing.T) {
	dir := t.TempDir()
	ann := filepath.Join(dir, "annotations")
	created := time.Now().Add(-time.Second).Truncate(time.Second)
	os.WriteFile(ann, []byte(fmt.Sprintf("other=\"x\"\n%s=\"3\"\n", "cleaner.kubernetes.gitlab.org/ttl")), 0o644)
	p := startShim(t, []string{"--ttl-file", ann, "--created", created.Format(time.RFC3339)})
	code, x := p.waitExit(60 * time.Second)
	notBefore(t, created.Add(3*time.Second), time.Now())
	if code != 124 || x.Reason != protocol.ReasonTTL {
		t.Fatalf("exit %d %+v, want 124 ttl", code, x)
	}
}

// A malformed TTL is ignored (never treated as 0).
func TestMalformedTTLIsIgnored(t *testing.T) {
	dir := t.TempDir()
	ann := filepath.Join(dir, "annotations")
	os.WriteFile(ann, []byte("cleaner.kubernetes.gitlab.org/ttl=\"soon\"\n"), 0o644)
	p := startShim(t, []string{"--ttl-file", ann, "--idle-timeout", "1500ms"})
	code, x := p.waitExit(10 * time.Second)
	if code != 125 || x.Reason != protocol.ReasonIdle {
		t.Fatalf("exit %d %+v, want the idle timeout (125), not the TTL", code, x)
	}
}

// Pings go on for twice the idle timeout, each sent once the previous one
// was answered, so the timeout is far longer than the gap between two
// pings even on a loaded machine.
func TestIdleTimeoutAndPingsKeepAlive(t *testing.T) {
	const idle = 2 * time.Second
	p := startShim(t, []string{"--idle-timeout", idle.String()})
	pingsUntil := time.Now().Add(2 * idle)
	var lastPing time.Time
	from := 0
	for n := 0; time.Now().Before(pingsUntil); n++ {
		nonce := fmt.Sprint("n", n)
		p.send(protocol.Command{Cmd: protocol.CmdPing, Nonce: nonce})
		lastPing = time.Now()
		_, from = p.waitRecord(from, 30*time.Second, func(r rec) bool {
			return r.Type == protocol.TypeAlive && strings.Contains(string(r.Payload), strconv.Quote(nonce))
		})
		select {
		case <-p.exited:
			t.Fatal("the shim exited although pings kept arriving")
		case <-time.After(100 * time.Millisecond):
		}
	}
	code, x := p.waitExit(60 * time.Second)
	notBefore(t, lastPing.Add(idle), time.Now())
	if code != 125 || x.Reason != protocol.ReasonIdle {
		t.Fatalf("exit %d %+v, want 125 idle", code, x)
	}
}

// A running script is not "idle": the idle timer waits for it.
func TestIdleTimeoutWaitsForTheRunningScript(t *testing.T) {
	dir := t.TempDir()
	s := script(t, dir, "work.sh", "sleep 1.5; echo done\n")
	p := startShim(t, []string{"--idle-timeout", "500ms"})
	p.send(run(s))
	p.waitExit(10 * time.Second)
	if st := p.waitStatus(s, time.Second); st.CommandExitCode != 0 {
		t.Fatalf("the script was interrupted by the idle timeout: %+v", st)
	}
}

func TestSIGTERMForwardsGraceExit(t *testing.T) {
	dir := t.TempDir()
	s := script(t, dir, "term.sh", "trap 'echo cleaning up; exit 7' TERM; echo ready; while :; do sleep 0.05; done\n")
	// The grace is an hour: the shim exits when the script's trap ends it,
	// not at the end of the grace.
	p := startShim(t, []string{"--grace", "1h"})
	p.send(run(s))
	p.waitRecord(0, 30*time.Second, func(r rec) bool { return string(r.Payload) == "ready\n" })
	p.signal(syscall.SIGTERM)
	code, x := p.waitExit(60 * time.Second)
	if code != 143 || x.Reason != protocol.ReasonSignal {
		t.Fatalf("exit %d %+v, want 143 signal", code, x)
	}
	if st := p.waitStatus(s, time.Second); st.CommandExitCode != 7 {
		t.Fatalf("the script's TERM trap did not run: %+v", st)
	}
	// (bash also reports the TERMinated sleep in between)
	if out := string(p.output()); !strings.HasPrefix(out, "ready\n") || !strings.HasSuffix(out, "cleaning up\n") {
		t.Fatalf("output %q", p.output())
	}
}

func TestStdinEOFModes(t *testing.T) {
	dir := t.TempDir()
	s := script(t, dir, "fail.sh", "exit 4\n")
	p := startShim(t, nil)
	p.send(protocol.Command{Cmd: protocol.CmdJob, ID: "j", Scripts: []string{s}})
	p.stdin.Close()
	if code, x := p.waitExit(5 * time.Second); code != 4 || x.Reason != protocol.ReasonStdinEOF {
		t.Fatalf("exit %d %+v, want the job's code 4 and stdin-eof", code, x)
	}

	// --on-stdin-eof wait: the shim does not end at EOF (its final record
	// would say stdin-eof) but at its idle timeout.
	w := startShim(t, []string{"--on-stdin-eof", "wait", "--idle-timeout", "1s"})
	w.stdin.Close()
	if _, x := w.waitExit(60 * time.Second); x.Reason != protocol.ReasonIdle {
		t.Fatalf("final record %+v, want idle: --on-stdin-eof wait must not exit at EOF", x)
	}
}

func TestExitCommandWaitsForQueuedWork(t *testing.T) {
	dir := t.TempDir()
	a := script(t, dir, "a.sh", "sleep 0.3; echo a\n")
	b := script(t, dir, "b.sh", "echo b\n")
	p := startShim(t, nil)
	p.send(run(a), run(b), protocol.Command{Cmd: protocol.CmdExit})
	if code, x := p.waitExit(5 * time.Second); code != 0 || x.Reason != protocol.ReasonExitCommand {
		t.Fatalf("exit %d %+v", code, x)
	}
	if string(p.output()) != "a\nb\n" {
		t.Fatalf("output %q", p.output())
	}
}

// At the deadline the main script is stopped, the remaining main scripts
// are skipped, and the after-scripts still run; the shim then exits 124
// with the deadline reason and writes no job record.
func TestDeadlineStillRunsAfterScripts(t *testing.T) {
	dir := t.TempDir()
	long := script(t, dir, "long.sh", "echo started; sleep 30; echo never\n")
	skipped := script(t, dir, "skipped.sh", "echo skipped-ran\n")
	after := script(t, dir, "after.sh", "echo after-ran\n")
	p := startShim(t, []string{"--deadline", "1", "--grace", "2s"})
	p.send(protocol.Command{Cmd: protocol.CmdJob, ID: "d", Scripts: []string{long, skipped}, After: []string{after}})
	code, x := p.waitExit(20 * time.Second)
	if code != 124 || x.Reason != protocol.ReasonDeadline {
		t.Fatalf("exit %d %+v, want 124 deadline", code, x)
	}
	if st := p.waitStatus(long, time.Second); st.CommandExitCode != 143 || st.Error == "" {
		t.Fatalf("main script status %+v, want 143 with the deadline as reason", st)
	}
	if st := p.waitStatus(after, time.Second); st.CommandExitCode != 0 || st.Phase != "after" {
		t.Fatalf("after-script status %+v, want 0 in phase after", st)
	}
	out := string(p.output())
	if out != "started\nafter-ran\n" {
		t.Fatalf("output %q, want the main script's start and the after-script's output only", out)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.records {
		if r.Type == protocol.TypeJob {
			t.Fatalf("a job record %q was written for a job the deadline ended", r.Payload)
		}
	}
}

// The after-scripts' budget after a deadline is bounded by --after-timeout:
// an after-script that outlives it is stopped and the shim exits 124.
func TestDeadlineAfterScriptsHaveABudget(t *testing.T) {
	dir := t.TempDir()
	long := script(t, dir, "long.sh", "sleep 30\n")
	after := script(t, dir, "after.sh", "echo after-started; sleep 30; echo never\n")
	p := startShim(t, []string{"--deadline", "1", "--grace", "500ms", "--after-timeout", "1s"})
	p.send(protocol.Command{Cmd: protocol.CmdJob, ID: "d", Scripts: []string{long}, After: []string{after}})
	code, x := p.waitExit(20 * time.Second)
	if code != 124 || x.Reason != protocol.ReasonDeadline || !strings.Contains(x.Message, "after-timeout") {
		t.Fatalf("exit %d %+v, want 124 deadline naming the after-timeout", code, x)
	}
	if st := p.waitStatus(after, time.Second); st.CommandExitCode != 143 {
		t.Fatalf("after-script status %+v, want stopped with SIGTERM (143)", st)
	}
	if out := string(p.output()); strings.Contains(out, "never") || !strings.Contains(out, "after-started") {
		t.Fatalf("output %q", out)
	}
}

// --after-timeout 0 keeps the old behaviour: the deadline stops everything.
func TestDeadlineWithoutAfterBudget(t *testing.T) {
	dir := t.TempDir()
	long := script(t, dir, "long.sh", "sleep 30\n")
	after := script(t, dir, "after.sh", "echo after-ran\n")
	p := startShim(t, []string{"--deadline", "1", "--grace", "500ms", "--after-timeout", "0"})
	p.send(protocol.Command{Cmd: protocol.CmdJob, ID: "d", Scripts: []string{long}, After: []string{after}})
	code, _ := p.waitExit(20 * time.Second)
	if code != 124 || strings.Contains(string(p.output()), "after-ran") {
		t.Fatalf("exit %d output %q: want 124 and no after-script", code, p.output())
	}
}

// A job's own timeout (timeout_ms) stops its running script in a real
// shim and skips the rest, after-scripts included; the job record follows
// and the shim goes on serving.
func TestJobTimeoutStopsTheJob(t *testing.T) {
	dir := t.TempDir()
	long := script(t, dir, "long.sh", "echo started; sleep 30; echo never\n")
	after := script(t, dir, "after.sh", "echo after-ran\n")
	next := script(t, dir, "next.sh", "echo next-ran\n")
	p := startShim(t, []string{"--grace", "2s"})
	p.send(protocol.Command{Cmd: protocol.CmdJob, ID: "t", Scripts: []string{long}, After: []string{after}, TimeoutMS: 500})
	p.send(protocol.Command{Cmd: protocol.CmdJob, ID: "n", Scripts: []string{next}})
	p.send(protocol.Command{Cmd: protocol.CmdExit})
	code, x := p.waitExit(20 * time.Second)
	if code != 0 || x.Reason != protocol.ReasonExitCommand {
		t.Fatalf("exit %d %+v, want 0 (the last job's) after the exit command", code, x)
	}
	if st := p.waitStatus(long, time.Second); st.CommandExitCode != 143 || !strings.HasPrefix(st.Error, protocol.JobTimeoutReason) {
		t.Fatalf("status %+v, want 143 with the job timeout as reason", st)
	}
	if out := string(p.output()); out != "started\nnext-ran\n" {
		t.Fatalf("output %q, want the stopped script's start and the next job's output only", out)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var jobs []string
	for _, r := range p.records {
		if r.Type == protocol.TypeJob {
			jobs = append(jobs, string(r.Payload))
		}
	}
	if len(jobs) != 2 || !strings.Contains(jobs[0], `"exit_code":143`) || !strings.Contains(jobs[0], `"cancelled":false`) {
		t.Fatalf("job records %q, want the timed-out job's (143, not cancelled) and the next one's", jobs)
	}
}
