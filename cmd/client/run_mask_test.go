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
