package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/internal/cmdutil"
	"github.com/tether-ci/tether/protocol"
)

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
	cmdutil.Report(log, oom, nil)
	if out := buf.String(); !strings.Contains(out, `level=ERROR msg="job failed" exit_code=137`) || !strings.Contains(out, `killed="out of memory (limit 64Mi)"`) {
		t.Errorf("quiet, OOM-killed script: %q", out)
	}
	buf.Reset()
	cmdutil.Report(log, client.Result{ExitCode: 3, FailedScript: "/s/a.sh", Statuses: []protocol.Status{{Script: "/s/a.sh", CommandExitCode: 3}}}, nil)
	cmdutil.Report(log, client.Result{Statuses: []protocol.Status{{Script: "/s/a.sh"}}}, nil)
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
