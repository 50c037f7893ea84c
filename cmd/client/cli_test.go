package main

import (
	"strings"
	"testing"
)

// TestCombinedShortFlags: short flags combine as kubectl users expect
// ("-qn ci"), and flags may follow the scripts.
func TestCombinedShortFlags(t *testing.T) {
	var f runFlags
	pos, err := parseArgs(newRunFlagSet(&f), []string{"-qn", "ci", "a.sh", "--after", "b.sh", "--read-only-root", "--", "--c.sh"})
	if err != nil {
		t.Fatal(err)
	}
	if !f.Quiet || f.Namespace != "ci" || len(f.After) != 1 || f.After[0] != "b.sh" || !f.ReadOnlyRoot.set || !f.ReadOnlyRoot.v {
		t.Fatalf("flags %+v", f)
	}
	if strings.Join(pos, " ") != "a.sh --c.sh" {
		t.Fatalf("positional %q, want a.sh --c.sh", pos)
	}
	var g runFlags
	if _, err := parseArgs(newRunFlagSet(&g), []string{"--read-only-root=false", "-v", "a.sh"}); err != nil || !g.ReadOnlyRoot.set || g.ReadOnlyRoot.v || !g.Verbose {
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
