package main

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/cmdutil"
	"github.com/tether-ci/tether/protocol"
)

func TestOOMText(t *testing.T) {
	for limit, want := range map[int64]string{
		0:         "out of memory",
		64 << 20:  "out of memory (limit 64Mi)",
		1 << 30:   "out of memory (limit 1Gi)",
		100000000: "out of memory (limit 100M)",
	} {
		if got := cmdutil.OOMText(limit); got != want {
			t.Errorf("cmdutil.OOMText(%d) = %q, want %q", limit, got, want)
		}
	}
}

// A session that ended because the job's container was OOMKilled (the
// error wraps the transport's *kube.ContainerEndedError) exits 137 and
// says so with the limit; another container end stays "outcome unknown".
func TestContainerOOMKilledExit(t *testing.T) {
	endedWith := func(code int32, reason string) error {
		e := &kube.ContainerEndedError{Namespace: "ci", Pod: "job", Container: kube.BuildContainer, ExitCode: code, Reason: reason, MemoryLimit: 64 << 20}
		// As the session wraps it: no result, the Connect error, the log's.
		return fmt.Errorf("%w: %w; %w", client.ErrNoResult, e, errors.New("the shim's log ends before the job's result"))
	}
	ended := func(reason string) error { return endedWith(137, reason) }
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	err := ended(kube.ReasonOOMKilled)
	if code := exitCode(client.Result{}, err); code != 137 {
		t.Errorf("exit code %d; want 137", code)
	}
	report(log, client.Result{}, err)
	if out := buf.String(); !strings.Contains(out, `killed="out of memory (limit 64Mi)"`) || !strings.Contains(out, "OOMKilled") || !strings.Contains(out, "exit_code=137") {
		t.Errorf("report: %s", out)
	}
	if code := exitCode(client.Result{}, ended("Error")); code != exitTether {
		t.Errorf("container ended with reason Error: exit code %d; want %d", code, exitTether)
	}
	// A script OOM-killed earlier left the reason OOMKilled; the shim then
	// crashed (exit code 2): not an OOM kill of the container.
	buf.Reset()
	err = endedWith(2, kube.ReasonOOMKilled)
	if code := exitCode(client.Result{}, err); code != exitTether {
		t.Errorf("container ended with exit code 2, reason OOMKilled: exit code %d; want %d", code, exitTether)
	}
	report(log, client.Result{}, err)
	if out := buf.String(); strings.Contains(out, "its container was OOMKilled") || strings.Contains(out, "killed=") {
		t.Errorf("report of a container that a crash ended after an earlier OOM kill: %s", out)
	}
	if code := exitCode(client.Result{ExitCode: 0}, nil); code != 0 {
		t.Errorf("a job that reported its result: exit code %d; want 0 whatever the container's reason", code)
	}
}

// --quiet hides progress, never the one line that says why a job failed
// when its output cannot: a script killed for memory (exit 137), killed
// by another signal, or not started. A script that exited with a code of
// its own says why itself: quiet says nothing.
func TestQuietStillSaysWhyTheJobFailed(t *testing.T) {
	var buf bytes.Buffer
	log, err := (&cmdutil.LogFlags{Quiet: true}).Logger(&buf)
	if err != nil {
		t.Fatal(err)
	}
	oom := client.Result{ExitCode: 137, FailedScript: "/s/build.sh", Statuses: []protocol.Status{
		{Script: "/s/build.sh", CommandExitCode: 137, Signal: "SIGKILL", OOMKilled: true, MemoryLimit: 64 << 20}}}
	report(log, oom, nil)
	if out := buf.String(); !strings.Contains(out, `level=ERROR msg="job failed" exit_code=137`) || !strings.Contains(out, `killed="out of memory (limit 64Mi)"`) {
		t.Errorf("quiet, OOM-killed script: %q", out)
	}
	buf.Reset()
	report(log, client.Result{ExitCode: 3, FailedScript: "/s/a.sh", Statuses: []protocol.Status{{Script: "/s/a.sh", CommandExitCode: 3}}}, nil)
	report(log, client.Result{Statuses: []protocol.Status{{Script: "/s/a.sh"}}}, nil)
	if buf.Len() != 0 {
		t.Errorf("quiet, a script's own exit code or success: %q", buf.String())
	}

	// The real CLI: a script SIGKILLed (as the OOM killer does) under -q.
	dir := t.TempDir()
	writeScript(t, dir, "killed.sh", "echo before\nkill -9 $$\n")
	stdout, stderr, code := tether(t, dir, "run", "--local", "-q", "killed.sh")
	if code != 137 || string(stdout) != "before\n" || !strings.Contains(string(stderr), `msg="job failed" exit_code=137`) || !strings.Contains(string(stderr), "signal=SIGKILL") {
		t.Errorf("tether run -q, script SIGKILLed: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
}
