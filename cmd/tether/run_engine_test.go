package main

import (
	"strings"
	"testing"
)

func TestRunLocalShebangRunsTheInterpreter(t *testing.T) {
	dir := t.TempDir()
	py := writeScript(t, dir, "hello.py", "#!/usr/bin/env python3\nimport sys\nprint('python', sys.version_info[0])\n")
	sh := writeScript(t, dir, "plain.sh", "echo shell\n")
	stdout, stderr, code := tether(t, dir, "run", "--local", py, sh)
	if code != 0 || string(stdout) != "python 3\nshell\n" {
		t.Fatalf("code %d stdout %q, want 0 and the python and shell lines; stderr: %s", code, stdout, stderr)
	}
}

func TestRunLocalShebangWithMissingInterpreter(t *testing.T) {
	dir := t.TempDir()
	abs := writeScript(t, dir, "abs.sh", "#!/no/such/interpreter -x\necho never\n")
	env := writeScript(t, dir, "env.sh", "#!/usr/bin/env no-such-interpreter-xyz\necho never\n")
	for name, script := range map[string]string{"/no/such/interpreter": abs, "no-such-interpreter-xyz": env} {
		stdout, stderr, code := tether(t, dir, "run", "--local", script)
		if code != 127 || len(stdout) != 0 {
			t.Fatalf("%s: code %d stdout %q, want 127 and no output; stderr: %s", name, code, stdout, stderr)
		}
		if !strings.Contains(string(stderr), "interpreter "+name) {
			t.Fatalf("%s: the error does not name the interpreter: %s", name, stderr)
		}
	}
}

func TestRunLocalShellWinsOverShebang(t *testing.T) {
	dir := t.TempDir()
	// sh ignores the first line as a comment, so the missing interpreter
	// does not matter once a shell is chosen.
	script := writeScript(t, dir, "s.sh", "#!/no/such/interpreter\necho \"$0 ran\"\n")
	stdout, stderr, code := tether(t, dir, "run", "--local", "--shell", "/bin/sh", script)
	if code != 0 || string(stdout) != script+" ran\n" {
		t.Fatalf("code %d stdout %q; stderr: %s", code, stdout, stderr)
	}
	_, stderr, code = tether(t, dir, "run", "--local", "--shell", "sh", script)
	if code != 2 || !strings.Contains(string(stderr), "--shell") {
		t.Fatalf("relative --shell: code %d stderr %s, want 2 naming --shell", code, stderr)
	}
	_, stderr, code = tether(t, dir, "run", "--local", "--shell", "/no/such/shell", script)
	if code != 127 || !strings.Contains(string(stderr), "/no/such/shell") {
		t.Fatalf("missing --shell: code %d stderr %s, want 127 naming the shell", code, stderr)
	}
}

func TestRunLocalTTY(t *testing.T) {
	dir := t.TempDir()
	script := writeScript(t, dir, "t.sh", "if [ -t 1 ]; then echo tty; else echo notty; fi\n")
	stdout, stderr, code := tether(t, dir, "run", "--local", "--tty", script)
	if code != 0 || strings.TrimRight(string(stdout), "\r\n") != "tty" {
		t.Fatalf("--tty: code %d stdout %q; stderr: %s", code, stdout, stderr)
	}
	stdout, _, _ = tether(t, dir, "run", "--local", script)
	if string(stdout) != "notty\n" {
		t.Fatalf("without --tty: stdout %q", stdout)
	}
}
