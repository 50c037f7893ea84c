package shim

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-ci/tether/protocol"
)

// engineCase is one scenario of the engine's rules: what happens, in
// order, and the transcript of records and signals it must produce.
type engineCase struct {
	name   string
	cfg    func(c *Config)
	refuse map[string]*startError
	steps  []action
	want   []string
	// code is the shim's exit code when the scenario ends the shim.
	code int
}

const (
	jobTimeout = `"the job's timeout_ms passed (5s)"`
	cancelled  = `"cancelled by the client"`
	sigterm    = `"the shim received SIGTERM (pod deletion or container stop)"`
)

func engineCases() []engineCase {
	job := send(jobCmd("j", []string{"/m1", "/m2"}, []string{"/a1"}))
	deadline := `"job deadline 2026-03-04T05:06:17Z reached"`
	return []engineCase{
		{
			name:  "a job runs its main scripts, then its after-scripts, then writes its job record",
			steps: []action{job, exits("/m1", 0), exits("/m2", 0), exits("/a1", 0), stdinEOF()},
			want: []string{
				"begin /m1 script j", `status /m1 script j 0 ""`,
				"begin /m2 script j", `status /m2 script j 0 ""`,
				"begin /a1 after j", `status /a1 after j 0 ""`,
				"job j exit=0 failed= cancelled=false",
				`exit stdin-eof 0 "all queued work is done"`,
			},
		},
		{
			name:  "a failing main script skips the rest; the after-scripts run and do not change the exit code",
			steps: []action{job, exits("/m1", 2), exits("/a1", 1), send(protocol.Command{Cmd: protocol.CmdExit})},
			want: []string{
				"begin /m1 script j", `status /m1 script j 2 ""`,
				"begin /a1 after j", `status /a1 after j 1 ""`,
				"job j exit=2 failed=/m1 cancelled=false",
				`exit exit-command 2 "all queued work is done"`,
			},
			code: 2,
		},
		{
			name:   "a script that cannot start fails its job; the after-scripts still run",
			refuse: map[string]*startError{"/m1": {code: codeNotFound, msg: "script /m1 does not exist"}},
			steps:  []action{job, exits("/a1", 0)},
			want: []string{
				"begin /m1 script j", `status /m1 script j 127 "script /m1 does not exist"`,
				"begin /a1 after j", `status /a1 after j 0 ""`,
				"job j exit=127 failed=/m1 cancelled=false",
			},
		},
		{
			name:  "a cancel stops the main script, skips the rest, and the after-script runs to completion",
			steps: []action{job, send(cancelCmd("", 0)), exits("/m1", 143), exits("/a1", 0)},
			want: []string{
				"begin /m1 script j", "signal TERM /m1",
				"status /m1 script j 143 " + cancelled,
				"begin /a1 after j", `status /a1 after j 0 ""`,
				"job j exit=143 failed=/m1 cancelled=true",
			},
		},
		{
			// The race: the main script exits while the cancel is on its
			// way; the engine reads the cancel before the exit. Marking
			// the job cancelled and stopping the running script are one
			// step, so the after-script started next is never hit.
			name:  "a cancel read while the main script's exit is pending spares the after-script that starts next",
			steps: []action{job, exitsUnseen("/m1", 0), send(cancelCmd("", 0)), deliver(), wait(time.Minute), exits("/a1", 0)},
			want: []string{
				"begin /m1 script j", `status /m1 script j 0 ""`,
				"begin /a1 after j", `status /a1 after j 0 ""`,
				"job j exit=143 failed= cancelled=true",
			},
		},
		{
			name:  "a first cancel read once the after-scripts run stops them (a cancel during the after-scripts)",
			steps: []action{send(jobCmd("j", []string{"/m1"}, []string{"/a1", "/a2"})), exits("/m1", 0), send(cancelCmd("", 0)), exits("/a1", 143)},
			want: []string{
				"begin /m1 script j", `status /m1 script j 0 ""`,
				"begin /a1 after j", "signal TERM /a1",
				"status /a1 after j 143 " + cancelled,
				"job j exit=143 failed= cancelled=true",
			},
		},
		{
			name:  "a second cancel stops the after-scripts too",
			steps: []action{job, send(cancelCmd("c1", 0)), exits("/m1", 143), send(cancelCmd("c2", 0)), exits("/a1", 143)},
			want: []string{
				"begin /m1 script j", "signal TERM /m1",
				"status /m1 script j 143 " + cancelled,
				"begin /a1 after j", "signal TERM /a1",
				"status /a1 after j 143 " + cancelled,
				"job j exit=143 failed=/m1 cancelled=true",
			},
		},
		{
			name:  "a resent cancel (same ID) is not a second cancel",
			steps: []action{job, send(cancelCmd("c1", 0)), exits("/m1", 143), send(cancelCmd("c1", 0)), exits("/a1", 0)},
			want: []string{
				"begin /m1 script j", "signal TERM /m1",
				"status /m1 script j 143 " + cancelled,
				"begin /a1 after j", `status /a1 after j 0 ""`,
				"job j exit=143 failed=/m1 cancelled=true",
			},
		},
		{
			name:  "a script that ignores the cancel's TERM gets KILL when the cancel's grace ends",
			steps: []action{job, send(cancelCmd("", 300)), wait(299 * time.Millisecond), wait(time.Millisecond), exits("/m1", 137), exits("/a1", 0)},
			want: []string{
				"begin /m1 script j", "signal TERM /m1", "signal KILL /m1",
				"status /m1 script j 137 " + cancelled,
				"begin /a1 after j", `status /a1 after j 0 ""`,
				"job j exit=137 failed=/m1 cancelled=true",
			},
		},
		{
			name: "a cancel cancels everything queued: a job runs nothing, a run command's script does not start",
			steps: []action{
				send(jobCmd("j1", []string{"/m1"}, nil)),
				send(protocol.Command{Cmd: protocol.CmdRun, Script: "/r1"}),
				send(jobCmd("j2", []string{"/m2"}, []string{"/a2"})),
				send(cancelCmd("", 0)), exits("/m1", 143),
			},
			want: []string{
				"begin /m1 script j1", "signal TERM /m1",
				"status /m1 script j1 143 " + cancelled,
				"job j1 exit=143 failed=/m1 cancelled=true",
				"begin /r1 script ", `status /r1 script  130 "cancelled by the client before the script started"`,
				"job j2 exit=143 failed= cancelled=true",
			},
		},
		{
			name:  "at the deadline the main script is stopped, the rest skipped, the after-scripts run; no job record",
			cfg:   func(c *Config) { c.Deadline = t0.Add(10 * time.Second) },
			steps: []action{job, wait(10 * time.Second), exits("/m1", 143), exits("/a1", 0)},
			want: []string{
				"begin /m1 script j", "signal TERM /m1",
				"status /m1 script j 143 " + deadline,
				"begin /a1 after j", `status /a1 after j 0 ""`,
				"exit deadline 124 " + deadline,
			},
			code: 124,
		},
		{
			name: "after the deadline the after-scripts run within their budget, then everything stops",
			cfg: func(c *Config) {
				c.Deadline, c.Grace, c.AfterTimeout = t0.Add(10*time.Second), time.Second, 5*time.Second
			},
			steps: []action{job, wait(10 * time.Second), exits("/m1", 143), wait(5*time.Second + 999*time.Millisecond), wait(time.Millisecond), exits("/a1", 143)},
			want: []string{
				"begin /m1 script j", "signal TERM /m1",
				"status /m1 script j 143 " + deadline,
				"begin /a1 after j", "signal TERM /a1",
				`status /a1 after j 143 "job deadline 2026-03-04T05:06:17Z reached; the after-scripts' budget (--after-timeout 5s) ran out too"`,
				`exit deadline 124 "job deadline 2026-03-04T05:06:17Z reached; the after-scripts' budget (--after-timeout 5s) ran out too"`,
			},
			code: 124,
		},
		{
			name: "a job's own after-timeout wins over the shim's",
			cfg:  func(c *Config) { c.Deadline, c.Grace = t0.Add(10*time.Second), time.Second },
			steps: []action{
				send(protocol.Command{Cmd: protocol.CmdJob, ID: "j", Scripts: []string{"/m1"}, After: []string{"/a1"}, AfterTimeoutMS: 2000}),
				wait(10 * time.Second), exits("/m1", 143), wait(2*time.Second + 999*time.Millisecond), wait(time.Millisecond), exits("/a1", 143),
			},
			want: []string{
				"begin /m1 script j", "signal TERM /m1",
				"status /m1 script j 143 " + deadline,
				"begin /a1 after j", "signal TERM /a1",
				`status /a1 after j 143 "job deadline 2026-03-04T05:06:17Z reached; the after-scripts' budget (the job's after-timeout 2s) ran out too"`,
				`exit deadline 124 "job deadline 2026-03-04T05:06:17Z reached; the after-scripts' budget (the job's after-timeout 2s) ran out too"`,
			},
			code: 124,
		},
		{
			name: "a job's negative after-timeout keeps its after-scripts from running after the deadline",
			cfg:  func(c *Config) { c.Deadline = t0.Add(10 * time.Second) },
			steps: []action{
				send(protocol.Command{Cmd: protocol.CmdJob, ID: "j", Scripts: []string{"/m1"}, After: []string{"/a1"}, AfterTimeoutMS: -1}),
				wait(10 * time.Second), exits("/m1", 143),
			},
			want: []string{
				"begin /m1 script j", "signal TERM /m1",
				"status /m1 script j 143 " + deadline,
				"exit deadline 124 " + deadline,
			},
			code: 124,
		},
		{
			name:  "with no after-script budget the deadline stops everything",
			cfg:   func(c *Config) { c.Deadline, c.AfterTimeout = t0.Add(10*time.Second), 0 },
			steps: []action{job, wait(10 * time.Second), exits("/m1", 143)},
			want: []string{
				"begin /m1 script j", "signal TERM /m1",
				"status /m1 script j 143 " + deadline,
				"exit deadline 124 " + deadline,
			},
			code: 124,
		},
		{
			name:  "a deadline during the after-scripts lets the running after-script go on",
			cfg:   func(c *Config) { c.Deadline = t0.Add(10 * time.Second) },
			steps: []action{job, exits("/m1", 0), exits("/m2", 0), wait(10 * time.Second), exits("/a1", 0)},
			want: []string{
				"begin /m1 script j", `status /m1 script j 0 ""`,
				"begin /m2 script j", `status /m2 script j 0 ""`,
				"begin /a1 after j", `status /a1 after j 0 ""`,
				"exit deadline 124 " + deadline,
			},
			code: 124,
		},
		{
			name:  "SIGTERM stops everything at once: no after-scripts, no job record",
			steps: []action{job, sendSignal(syscall.SIGTERM), exits("/m1", 143)},
			want: []string{
				"begin /m1 script j", "signal TERM /m1",
				"status /m1 script j 143 " + sigterm,
				"exit signal 143 " + sigterm,
			},
			code: 143,
		},
		{
			name:  "SIGTERM during a deadline's after-scripts stops them",
			cfg:   func(c *Config) { c.Deadline = t0.Add(10 * time.Second) },
			steps: []action{job, wait(10 * time.Second), exits("/m1", 143), sendSignal(syscall.SIGTERM), exits("/a1", 143)},
			want: []string{
				"begin /m1 script j", "signal TERM /m1",
				"status /m1 script j 143 " + deadline,
				"begin /a1 after j", "signal TERM /a1",
				"status /a1 after j 143 " + sigterm,
				"exit signal 143 " + sigterm,
			},
			code: 143,
		},
		{
			name:  "a script that ignores the shim's TERM is killed after the grace; one that never reports is given up",
			steps: []action{job, sendSignal(syscall.SIGTERM), wait(10 * time.Second), wait(2*time.Second + 2*time.Second)},
			want: []string{
				"begin /m1 script j", "signal TERM /m1", "signal KILL /m1",
				"exit signal 143 " + sigterm,
			},
			code: 143,
		},
		{
			name:  "other signals are forwarded to the running script",
			steps: []action{job, sendSignal(syscall.SIGUSR1), sendSignal(syscall.SIGINT), exits("/m1", 0)},
			want: []string{
				"begin /m1 script j", "signal USR1 /m1", "signal INT /m1",
				`status /m1 script j 0 ""`, "begin /m2 script j",
			},
		},
		{
			name: "a job's own timeout stops its running main script and skips the rest, after-scripts included; the job record follows",
			steps: []action{
				send(protocol.Command{Cmd: protocol.CmdJob, ID: "j", Scripts: []string{"/m1", "/m2"}, After: []string{"/a1"}, TimeoutMS: 5000}),
				wait(4999 * time.Millisecond), wait(time.Millisecond), exits("/m1", 143),
			},
			want: []string{
				"begin /m1 script j", "signal TERM /m1",
				"status /m1 script j 143 " + jobTimeout,
				"job j exit=143 failed=/m1 cancelled=false",
			},
		},
		{
			name: "a job's own timeout during its after-scripts stops them; the exit code stays the main scripts'",
			steps: []action{
				send(protocol.Command{Cmd: protocol.CmdJob, ID: "j", Scripts: []string{"/m1"}, After: []string{"/a1", "/a2"}, TimeoutMS: 5000}),
				exits("/m1", 0), wait(5 * time.Second), exits("/a1", 143),
			},
			want: []string{
				"begin /m1 script j", `status /m1 script j 0 ""`,
				"begin /a1 after j", "signal TERM /a1",
				"status /a1 after j 143 " + jobTimeout,
				"job j exit=0 failed= cancelled=false",
			},
		},
		{
			name: "a job whose timeout passes as its main script exits 0 runs nothing more and exits 124",
			steps: []action{
				send(protocol.Command{Cmd: protocol.CmdJob, ID: "j", Scripts: []string{"/m1", "/m2"}, After: []string{"/a1"}, TimeoutMS: 5000}),
				exitsUnseen("/m1", 0), wait(5 * time.Second), deliver(),
			},
			want: []string{
				"begin /m1 script j", `status /m1 script j 0 ""`,
				"job j exit=124 failed= cancelled=false",
			},
		},
		{
			name: "a job's timeout counts from its start, not from when it was queued; a script ignoring TERM is killed after the grace",
			cfg:  func(c *Config) { c.Grace = time.Second },
			steps: []action{
				send(jobCmd("j1", []string{"/m1"}, nil)),
				send(protocol.Command{Cmd: protocol.CmdJob, ID: "j2", Scripts: []string{"/m2"}, TimeoutMS: 5000}),
				wait(time.Minute), exits("/m1", 0),
				wait(4999 * time.Millisecond), wait(time.Millisecond), wait(time.Second), exits("/m2", 137),
			},
			want: []string{
				"begin /m1 script j1", `status /m1 script j1 0 ""`,
				"job j1 exit=0 failed= cancelled=false",
				"begin /m2 script j2", "signal TERM /m2", "signal KILL /m2",
				"status /m2 script j2 137 " + jobTimeout,
				"job j2 exit=137 failed=/m2 cancelled=false",
			},
		},
		{
			name: "the idle timeout counts only while nothing runs; a ping resets it",
			cfg:  func(c *Config) { c.IdleTimeout = 30 * time.Second },
			steps: []action{
				send(jobCmd("j", []string{"/m1"}, nil)), wait(time.Hour), exits("/m1", 0),
				wait(29 * time.Second), send(protocol.Command{Cmd: protocol.CmdPing}),
				wait(29 * time.Second), wait(time.Second),
			},
			want: []string{
				"begin /m1 script j", `status /m1 script j 0 ""`,
				"job j exit=0 failed= cancelled=false",
				"alive idle ",
				`exit idle 125 "no command or ping for 30s while idle: the client is gone"`,
			},
			code: 125,
		},
		{
			name: "a ping names the running script",
			steps: []action{
				send(jobCmd("j", []string{"/m1"}, nil)), send(protocol.Command{Cmd: protocol.CmdPing}),
			},
			want: []string{"begin /m1 script j", "alive running /m1"},
		},
	}
}

// TestEngineRules drives the engine through each scenario with fake
// processes on a fake clock, so every ordering is the one written down.
func TestEngineRules(t *testing.T) {
	for _, tc := range engineCases() {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			if tc.cfg != nil {
				tc.cfg(cfg)
			}
			h := newHarness(t, cfg, tc.refuse)
			for _, a := range tc.steps {
				a(h)
			}
			got := h.tr.all()
			if !slices.Equal(got, tc.want) {
				t.Fatalf("transcript:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
			last := tc.want[len(tc.want)-1]
			if wantEnd := strings.HasPrefix(last, "exit "); h.ended != wantEnd || (h.ended && h.code != tc.code) {
				t.Fatalf("ended %v with code %d, want ended %v with code %d", h.ended, h.code, wantEnd, tc.code)
			}
		})
	}
}

// The pod's TTL annotation ends the shim like SIGTERM: everything stops.
func TestEngineTTL(t *testing.T) {
	file := filepath.Join(t.TempDir(), "annotations")
	if err := os.WriteFile(file, []byte(TTLAnnotation+"=\"60\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.TTLFile = file
	h := newHarness(t, cfg, nil)
	send(jobCmd("j", []string{"/m1"}, []string{"/a1"}))(h)
	wait(59 * time.Second)(h)
	wait(time.Second)(h)
	exits("/m1", 143)(h)
	msg := `"pod TTL (` + TTLAnnotation + ` annotation) expired at 2026-03-04T05:07:07Z"`
	want := []string{"begin /m1 script j", "signal TERM /m1", "status /m1 script j 143 " + msg, "exit ttl 124 " + msg}
	if got := h.tr.all(); !slices.Equal(got, want) || !h.ended || h.code != 124 {
		t.Fatalf("transcript %q (ended %v, code %d), want %q and code 124", got, h.ended, h.code, want)
	}
}
