package shim_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/protocol"
)

// replayAfter returns the raw bytes written after the resumed record with
// nonce, once want bytes of replay have arrived.
func (p *shimProc) replayAfter(t *testing.T, nonce string, want int) []byte {
	t.Helper()
	marker := []byte(fmt.Sprintf(`{"nonce":%q`, nonce))
	var got []byte
	eventually(t, 60*time.Second, "the replay", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		raw := p.raw.Bytes()
		i := bytes.Index(raw, marker)
		if i < 0 {
			return false
		}
		nl := bytes.IndexByte(raw[i:], '\n')
		if nl < 0 {
			return false
		}
		rest := raw[i+nl+1:]
		if len(rest) < want {
			return false
		}
		got = append([]byte(nil), rest[:want]...)
		return true
	})
	return got
}

// checkReplays resumes from offset mid and then from 0 and fails unless
// each replay is byte-identical to original, the stream written so far.
func (p *shimProc) checkReplays(t *testing.T, original []byte, mid int64) {
	t.Helper()
	p.send(protocol.Command{Cmd: protocol.CmdResume, From: mid, Nonce: "r1"})
	if got := p.replayAfter(t, "r1", len(original)-int(mid)); !bytes.Equal(got, original[mid:]) {
		t.Fatalf("replay from offset %d differs from the original stream", mid)
	}
	p.send(protocol.Command{Cmd: protocol.CmdResume, From: 0, Nonce: "r2"})
	if got := p.replayAfter(t, "r2", len(original)); !bytes.Equal(got, original) {
		t.Fatal("replay from 0 differs from the original stream")
	}
}

// Resume replays the stream from any record offset, byte-identical to the
// original, from memory and from the spool file.
func TestResumeReplaysExactly(t *testing.T) {
	for _, args := range [][]string{nil, {"--spool-dir", "SPOOL"}} {
		t.Run(strings.Join(args, "="), func(t *testing.T) {
			dir := t.TempDir()
			for i := range args {
				args[i] = strings.ReplaceAll(args[i], "SPOOL", filepath.Join(dir, "spool"))
			}
			s := script(t, dir, "out.sh", "i=0; while [ $i -lt 2000 ]; do echo line $i; i=$((i+1)); done; printf 'no newline'\n")
			p := startShim(t, args)
			p.send(run(s))
			p.waitStatus(s, 20*time.Second)
			p.mu.Lock()
			original := append([]byte(nil), p.raw.Bytes()...)
			mid := p.records[len(p.records)/2]
			p.mu.Unlock()
			p.checkReplays(t, original, mid.Seq)
		})
	}
}

// A resume beyond what memory retains is refused with a clear error.
func TestResumeOutsideTheWindowIsAnError(t *testing.T) {
	dir := t.TempDir()
	s := script(t, dir, "big.sh", "head -c 300000 /dev/zero | tr '\\0' a\n")
	p := startShim(t, []string{"--replay-bytes", "65536"})
	p.send(run(s))
	p.waitStatus(s, 10*time.Second)
	p.send(protocol.Command{Cmd: protocol.CmdResume, From: 0, Nonce: "old"})
	r, _ := p.waitRecord(0, 5*time.Second, ofType(protocol.TypeResumed))
	var ans protocol.Resumed
	mustJSON(t, r.Payload, &ans)
	if ans.Error == "" || ans.Oldest == 0 || !strings.Contains(ans.Error, "--spool-dir") {
		t.Fatalf("resume answer %+v, want an error naming the retained window", ans)
	}
}

// Cancel: TERM to the group, grace, KILL; the job ends cancelled; the
// after-scripts still run; a second cancel stops them too.
func TestCancelJob(t *testing.T) {
	dir := t.TempDir()
	long := script(t, dir, "long.sh", "echo working; sleep 30\n")
	stubborn := script(t, dir, "stubborn.sh", "trap 'echo no' TERM; echo working; while :; do sleep 0.05; done\n")
	never := script(t, dir, "never.sh", "echo must not run\n")
	after := script(t, dir, "after.sh", "echo after ran\n")
	p := startShim(t, []string{"--grace", "1h"})
	p.send(protocol.Command{Cmd: protocol.CmdJob, ID: "c1", Scripts: []string{long, never}, After: []string{after}})
	p.waitRecord(0, 5*time.Second, func(r rec) bool { return string(r.Payload) == "working\n" })
	p.send(protocol.Command{Cmd: protocol.CmdCancel})
	r, _ := p.waitRecord(0, 5*time.Second, ofType(protocol.TypeJob))
	var j protocol.JobDone
	mustJSON(t, r.Payload, &j)
	st := p.waitStatus(long, time.Second)
	if !j.Cancelled || j.ExitCode != 143 || st.Signal != "SIGTERM" || !strings.Contains(st.Error, "cancel") {
		t.Fatalf("job %+v status %+v, want cancelled by SIGTERM", j, st)
	}
	if out := string(p.output()); strings.Contains(out, "must not run") || !strings.Contains(out, "after ran") {
		t.Fatalf("output %q: the rest of the job must be skipped and the after-script run", out)
	}

	// grace_ms: a script ignoring TERM is killed after the cancel's grace.
	p.send(protocol.Command{Cmd: protocol.CmdJob, ID: "c2", Scripts: []string{stubborn}})
	_, i := p.waitRecord(0, 5*time.Second, func(r rec) bool {
		return r.Type == protocol.TypeBegin && strings.Contains(string(r.Payload), "stubborn")
	})
	p.waitRecord(i, 5*time.Second, func(r rec) bool { return string(r.Payload) == "working\n" })
	// The shim's own grace is an hour: the status can only come from
	// the cancel's grace.
	p.send(protocol.Command{Cmd: protocol.CmdCancel, GraceMS: 300})
	st = p.waitStatus(stubborn, 60*time.Second)
	if st.Signal != "SIGKILL" {
		t.Fatalf("status %+v, want SIGKILL after the cancel's 300ms grace", st)
	}

	// A resent job ID is not run twice.
	p.send(protocol.Command{Cmd: protocol.CmdJob, ID: "c1", Scripts: []string{never}}, protocol.Command{Cmd: protocol.CmdExit})
	p.waitExit(5 * time.Second)
	if strings.Contains(string(p.output()), "must not run") {
		t.Fatal("a job ID was run twice")
	}
}

// A cancel resent with the same ID (a client unsure whether it arrived) is
// not a second cancel: the after-scripts still run to the end. A cancel
// with another ID is one, and stops them.
func TestResentCancelIsNotASecondCancel(t *testing.T) {
	dir := t.TempDir()
	long := script(t, dir, "long.sh", "echo working; sleep 30\n")
	after := script(t, dir, "after.sh", "echo after started; sleep 1; echo after done\n")
	p := startShim(t, []string{"--grace", "10s"})
	for _, tc := range []struct {
		job, secondID string
		afterDone     bool
	}{
		{job: "same", secondID: "same-c1", afterDone: true},
		{job: "other", secondID: "other-c2", afterDone: false},
	} {
		p.send(protocol.Command{Cmd: protocol.CmdJob, ID: tc.job, Scripts: []string{long}, After: []string{after}})
		_, i := p.waitRecord(0, 5*time.Second, func(r rec) bool {
			return r.Type == protocol.TypeBegin && strings.Contains(string(r.Payload), `"job":"`+tc.job+`"`)
		})
		_, i = p.waitRecord(i, 5*time.Second, func(r rec) bool { return string(r.Payload) == "working\n" })
		p.send(protocol.Command{Cmd: protocol.CmdCancel, ID: tc.job + "-c1"})
		_, i = p.waitRecord(i, 5*time.Second, func(r rec) bool { return string(r.Payload) == "after started\n" })
		p.send(protocol.Command{Cmd: protocol.CmdCancel, ID: tc.secondID})
		r, j := p.waitRecord(i, 10*time.Second, ofType(protocol.TypeJob))
		var done protocol.JobDone
		mustJSON(t, r.Payload, &done)
		p.mu.Lock()
		var got bool
		for _, r := range p.records[i:j] {
			got = got || string(r.Payload) == "after done\n"
		}
		p.mu.Unlock()
		if !done.Cancelled || got != tc.afterDone {
			t.Fatalf("job %s, second cancel %q: job %+v, after-script finished %v, want %v", tc.job, tc.secondID, done, got, tc.afterDone)
		}
	}
}
