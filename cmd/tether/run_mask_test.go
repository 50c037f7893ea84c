package main

import (
	"strings"
	"testing"
)

// --mask-env masks a variable's value in the job's output (whole and
// URL-encoded); a value too short to mask safely is bad input.
func TestRunLocalMaskEnv(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "leak.sh", "echo \"token $TOKEN\"\nprintf 'enc a%%2Fb-c%%3Dd-9\\n'\n")
	stdout, stderr, code := tether(t, dir, "run", "--local", "--env", "TOKEN=a/b-c=d-9", "--mask-env", "TOKEN", "leak.sh")
	if code != 0 || string(stdout) != "token [MASKED]\nenc [MASKED]\n" {
		t.Fatalf("exit %d stdout %q stderr %s", code, stdout, stderr)
	}
	_, stderr, code = tether(t, dir, "run", "--local", "--env", "TOKEN=short", "--mask-env", "TOKEN", "leak.sh")
	if code != 2 || !strings.Contains(string(stderr), "too short to mask safely") || strings.Contains(string(stderr), "short\n") {
		t.Fatalf("exit %d stderr %s", code, stderr)
	}
	_, stderr, code = tether(t, dir, "run", "--local", "--mask-env", "TETHER_TEST_NO_SUCH_VAR", "leak.sh")
	if code != 2 || !strings.Contains(string(stderr), "no such variable") {
		t.Fatalf("exit %d stderr %s", code, stderr)
	}
}

// A 20 MB job under --output-limit 1MiB writes exactly 1 MiB, ends with its
// own exit code, and says once how much it dropped.
func TestRunLocalOutputLimit(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "big.sh", "head -c 20000000 /dev/zero | tr '\\0' 'x'\nexit 7\n")
	stdout, stderr, code := tether(t, dir, "run", "--local", "--output-limit", "1MiB", "big.sh")
	if code != 7 || len(stdout) != 1<<20 {
		t.Fatalf("exit %d, %d bytes of output; want 7 and 1 MiB (stderr %s)", code, len(stdout), stderr)
	}
	if n := strings.Count(string(stderr), "output limit reached"); n != 1 || !strings.Contains(string(stderr), "dropped_bytes=18951424") {
		t.Fatalf("stderr has %d notices, want one with dropped_bytes=18951424:\n%s", n, stderr)
	}
	_, stderr, code = tether(t, dir, "run", "--local", "--output-limit", "lots", "big.sh")
	if code != 2 || !strings.Contains(string(stderr), "output-limit") {
		t.Fatalf("exit %d stderr %s", code, stderr)
	}
}
