package main

import (
	"bytes"
	"errors"
	"os/exec"
	"testing"
)

// `tether run --stderr separate` writes the scripts' stdout to its stdout
// and their stderr to its stderr, each byte for byte (with -q nothing else
// is on stderr); the default keeps them merged in the order written.
func TestRunLocalStderrSeparate(t *testing.T) {
	dir := t.TempDir()
	body := "echo out one\necho err one >&2\nprintf '" + allBytes() + "' >&2\n" +
		"head -c 100000 /dev/zero | tr '\\0' e >&2\nhead -c 300000 /dev/zero | tr '\\0' o\n" +
		"printf 'out no newline'\nprintf 'err no newline' >&2\nexit 4\n"
	script := writeScript(t, dir, "both.sh", body)
	wantOut, wantErr := shStreams(t, script)
	stdout, stderr, code := tether(t, dir, "run", "--local", "-q", "--stderr", "separate", script)
	if code != 4 {
		t.Fatalf("exit %d, want 4; stderr %q", code, clip(stderr))
	}
	if !bytes.Equal(stdout, wantOut) {
		t.Errorf("stdout differs: %d bytes %q..., want %d", len(stdout), clip(stdout), len(wantOut))
	}
	if !bytes.Equal(stderr, wantErr) {
		t.Errorf("stderr differs: %d bytes %q..., want %d", len(stderr), clip(stderr), len(wantErr))
	}

	stdout, stderr, code = tether(t, dir, "run", "--local", "-q", script)
	if want := shOutput(t, script); code != 4 || len(stderr) != 0 || !bytes.Equal(stdout, want) {
		t.Fatalf("merged: exit %d, %d bytes on stdout, stderr %q (want %d bytes on stdout, as sh 2>&1 writes them)", code, len(stdout), clip(stderr), len(want))
	}
	stdout, _, _ = tether(t, dir, "run", "--local", "-q", writeScript(t, dir, "order.sh", "echo out one\necho err one >&2\nprintf x >&2\necho y\n"))
	if string(stdout) != "out one\nerr one\nxy\n" {
		t.Fatalf("merged: stdout %q, want both streams in the order written", stdout)
	}

	for _, args := range [][]string{
		{"run", "--local", "--stderr", "apart", script},
		{"run", "--local", "--stderr", "separate", "--tty", script},
		{"run", "--local", "--stderr", "separate", "--log-format", "json", script},
	} {
		if stdout, stderr, code := tether(t, dir, args...); code != 2 || len(stdout) != 0 || len(stderr) == 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q: want 2 and a message", args, code, stdout, stderr)
		}
	}
}

// shStreams runs `sh SCRIPT` and returns its stdout and stderr: what
// tether run --stderr separate must reproduce.
func shStreams(t *testing.T, script string) (stdout, stderr []byte) {
	t.Helper()
	cmd := exec.Command("sh", script)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	var ee *exec.ExitError
	if err := cmd.Run(); err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return out.Bytes(), errb.Bytes()
}
