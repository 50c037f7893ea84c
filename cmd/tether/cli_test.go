package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tether-ci/tether/internal/runcmd"

	"github.com/tether-ci/tether/internal/cmdutil"
)

// TestCombinedShortFlags: short flags combine as kubectl users expect
// ("-qn ci"), and flags may follow the scripts.
func TestCombinedShortFlags(t *testing.T) {
	var f runcmd.Flags
	pos, err := cmdutil.ParseArgs(runcmd.NewFlagSet(&f), []string{"-qn", "ci", "a.sh", "--after", "b.sh", "--read-only-root", "--", "--c.sh"})
	if err != nil {
		t.Fatal(err)
	}
	if !f.Quiet || f.Namespace != "ci" || len(f.After) != 1 || f.After[0] != "b.sh" || f.ReadOnlyRoot == nil || !*f.ReadOnlyRoot {
		t.Fatalf("flags %+v", f)
	}
	if strings.Join(pos, " ") != "a.sh --c.sh" {
		t.Fatalf("positional %q, want a.sh --c.sh", pos)
	}
	var g runcmd.Flags
	if _, err := cmdutil.ParseArgs(runcmd.NewFlagSet(&g), []string{"--read-only-root=false", "-v", "a.sh"}); err != nil || g.ReadOnlyRoot == nil || *g.ReadOnlyRoot || !g.Verbose {
		t.Fatalf("--read-only-root=false -v: %v %+v", err, g)
	}
}

// TestFlagErrorsSpellLongFlags: a bad flag is exit 2 with an error naming
// the flag the way it is typed.
func TestFlagErrorsSpellLongFlags(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "a.sh", "#!/bin/sh\ntrue\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--local", "--timeout", "soon", "a.sh"}, `"--timeout"`},
		{[]string{"run", "--local", "--bogus", "a.sh"}, "--bogus"},
		{[]string{"run", "--local", "-qv", "a.sh"}, "--quiet and --verbose"},
		{[]string{"attach", "--from", "x", "pod"}, `"--from"`},
		{[]string{"attach", "--keep", "--delete", "pod"}, "--keep and --delete"},
		{[]string{"gc", "--grace"}, "--grace"},
	} {
		_, stderr, code := tether(t, dir, c.args...)
		if code != exitUsage || !strings.Contains(string(stderr), c.want) || strings.Contains(string(stderr), " -timeout") {
			t.Errorf("%v: exit %d stderr %q, want %d naming %s", c.args, code, stderr, exitUsage, c.want)
		}
	}
}

// TestHelpListsExitCodes: every command's --help lists tether's exit codes.
func TestHelpListsExitCodes(t *testing.T) {
	dir := t.TempDir()
	for _, cmd := range []string{"run", "attach", "gc"} {
		stdout, _, code := tether(t, dir, cmd, "--help")
		if code != 0 {
			t.Fatalf("%s --help: exit %d", cmd, code)
		}
		for _, want := range []string{"Exit codes:", "\n  0 ", "\n  2 ", "\n  124 ", "\n  125 ", "130, 143", "job's own exit code"} {
			if !strings.Contains(string(stdout), want) {
				t.Errorf("%s --help lacks %q:\n%s", cmd, want, stdout)
			}
		}
	}
}

// TestVerboseShowsDebugLines: -v lowers the log level to debug.
func TestVerboseShowsDebugLines(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "a.sh", "#!/bin/sh\necho hi\n")
	_, quiet, code := tether(t, dir, "run", "--local", "a.sh")
	if code != 0 || strings.Contains(string(quiet), "level=DEBUG") {
		t.Fatalf("without -v: exit %d stderr %s, want 0 and no debug lines", code, quiet)
	}
	stdout, stderr, code := tether(t, dir, "run", "--local", "-v", "a.sh")
	if code != 0 || string(stdout) != "hi\n" || !strings.Contains(string(stderr), "level=DEBUG") {
		t.Fatalf("-v: exit %d stdout %q stderr %s, want 0, hi and debug lines", code, stdout, stderr)
	}
}

// TestJSONLogsArePure: with --log-format json every stderr line is a JSON
// object (the CLI's records, its usage errors and the local shim's own
// diagnostics), durations are numbers of seconds, and the summary names
// the skipped scripts and the job's total duration.
func TestJSONLogsArePure(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "a.sh", "#!/bin/sh\necho a\nexit 3\n")
	writeScript(t, dir, "b.sh", "#!/bin/sh\necho b\n")
	writeScript(t, dir, "c.sh", "#!/bin/sh\necho c\n")
	parse := func(stderr []byte) []map[string]any {
		t.Helper()
		var recs []map[string]any
		for _, line := range strings.Split(strings.TrimSuffix(string(stderr), "\n"), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("stderr line is not JSON: %q (%v)\nstderr:\n%s", line, err, stderr)
			}
			recs = append(recs, m)
		}
		return recs
	}
	stdout, stderr, code := tether(t, dir, "run", "--local", "--log-format", "json", "--idle-timeout", "1m", "a.sh", "b.sh", "--after", "c.sh")
	if code != 3 || string(stdout) != "a\nc\n" {
		t.Fatalf("exit %d stdout %q, want 3, a c", code, stdout)
	}
	var summary, status map[string]any
	for _, r := range parse(stderr) {
		switch r["msg"] {
		case "job failed":
			summary = r
		case "script failed":
			status = r
		}
	}
	if status == nil {
		t.Fatalf("no script failed record:\n%s", stderr)
	}
	if _, ok := status["duration"].(float64); !ok {
		t.Errorf("script duration %v is not a number of seconds", status["duration"])
	}
	if summary == nil {
		t.Fatalf("no summary:\n%s", stderr)
	}
	if _, ok := summary["duration"].(float64); !ok {
		t.Errorf("job duration %v is not a number of seconds", summary["duration"])
	}
	if sk, _ := summary["skipped"].([]any); len(sk) != 1 || !strings.HasSuffix(sk[0].(string), "/b.sh") {
		t.Errorf("summary skipped = %v, want b.sh", summary["skipped"])
	}
	// Bad input is a JSON line too.
	_, stderr, code = tether(t, dir, "run", "--local", "--log-format=json", "--bogus", "a.sh")
	if recs := parse(stderr); code != exitUsage || len(recs) == 0 || !strings.Contains(recs[0]["msg"].(string), "--bogus") {
		t.Errorf("bad flag: exit %d stderr %s, want %d and JSON naming --bogus", code, stderr, exitUsage)
	}
}

// TestJSONLinesWrapsShimDiagnostics: the local shim's stderr lines become
// JSON records.
func TestJSONLinesWrapsShimDiagnostics(t *testing.T) {
	var buf bytes.Buffer
	j := cmdutil.NewJSONLines(&buf)
	fmt.Fprint(j, `{"level":"INFO","msg":"ok"}`+"\ntime=x level=WARN msg=\"from the shim\"\npartial")
	j.Flush()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 3 || lines[0] != `{"level":"INFO","msg":"ok"}` {
		t.Fatalf("lines %q", lines)
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("not JSON: %q", l)
		}
	}
}
