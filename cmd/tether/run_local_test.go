package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// shOutput runs `sh SCRIPT 2>&1` and returns its output: what tether must
// reproduce byte for byte.
func shOutput(t *testing.T, script string) []byte {
	t.Helper()
	out, err := exec.Command("sh", "-c", `sh "$1" 2>&1`, "sh", script).Output()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return out
}

// allBytes is a printf format that prints every byte value once.
func allBytes() string {
	var b strings.Builder
	for i := range 256 {
		fmt.Fprintf(&b, `\%03o`, i)
	}
	return b.String()
}

func TestRunLocalOutputIsByteExact(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"binary":      "printf '" + allBytes() + "'\nprintf '\\000\\000\\n\\377\\376'\n",
		"long-line":   "head -c 102400 /dev/zero | tr '\\0' 'a'\n",
		"progress":    "for i in 1 2 3 4; do printf '\\r%d%%' $((i*25)); sleep 0.03; done\nprintf '\\r\\n'\n",
		"utf8-split":  "printf '\\342'; sleep 0.1; printf '\\202\\254 euro\\n'; printf '\\360\\237'; sleep 0.1; printf '\\230\\200\\n'\n",
		"mixed":       "echo out; echo err >&2; printf 'no newline at the end' >&2\n",
		"backslashes": "printf '%s\\n' 'a\\\\b \\x41 \\r literal'\nprintf 'tab\\tesc\\033[31mred\\033[0m\\n'\n",
		"empty":       "true\n",
		"fake-status": "printf '%s\\n' '{\"command_exit_code\": 0, \"script\": \"x\"}'\nprintf 's 0 {\"command_exit_code\":0}\\nj 5 {\"exit_code\":0}\\nx 0 {}\\n'\nexit 9\n",
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			script := writeScript(t, dir, name+".sh", body)
			want := shOutput(t, script)
			stdout, stderr, code := tether(t, dir, "run", "--local", script)
			if !bytes.Equal(stdout, want) {
				t.Fatalf("stdout differs from sh 2>&1:\n got %q\nwant %q\nstderr: %s", clip(stdout), clip(want), stderr)
			}
			wantCode := 0
			if name == "fake-status" {
				wantCode = 9
			}
			if code != wantCode {
				t.Fatalf("exit code %d, want %d; stderr: %s", code, wantCode, stderr)
			}
		})
	}
}

func clip(b []byte) []byte {
	if len(b) > 300 {
		return append(b[:300:300], "..."...)
	}
	return b
}

func TestRunLocal50MBIsByteExact(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 50<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		v := r.Uint32()
		if v%61 == 0 {
			data[i] = '\n'
		} else {
			data[i] = byte(v >> 8)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "data.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	writeScript(t, dir, "big.sh", "cat data.bin\n")
	cmd := exec.Command(filepath.Join(binDir, "tether"), "run", "--local", "--quiet", "big.sh")
	cmd.Dir = dir
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, stdout)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("tether: %v; stderr: %s", err, stderr.String())
	}
	want := sha256.Sum256(data)
	if n != int64(len(data)) || !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatalf("got %d bytes with a different sha256, want %d bytes", n, len(data))
	}
}

func TestRunLocalJobSemanticsAndSummary(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "ok.sh", "echo ok\n")
	writeScript(t, dir, "fail.sh", "echo failing; exit 4\n")
	writeScript(t, dir, "skipped.sh", "echo skipped\n")
	writeScript(t, dir, "after.sh", "echo after\n")
	// Relative paths, flags after the scripts.
	stdout, stderr, code := tether(t, dir, "run", "--local", "ok.sh", "fail.sh", "skipped.sh", "--after", "after.sh", "--log-format", "json")
	if code != 4 {
		t.Fatalf("exit code %d, want 4; stderr: %s", code, stderr)
	}
	if string(stdout) != "ok\nfailing\nafter\n" {
		t.Fatalf("stdout %q", stdout)
	}
	// stderr is JSON lines: one summary per script with its exit code and
	// duration, then the job's.
	var summaries []string
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("stderr line %q is not JSON: %v", sc.Text(), err)
		}
		if s, ok := m["script"].(string); ok && m["exit_code"] != nil {
			if _, ok := m["duration"]; !ok {
				t.Errorf("summary without duration: %s", sc.Text())
			}
			summaries = append(summaries, fmt.Sprintf("%s=%v", filepath.Base(s), m["exit_code"]))
		}
		if m["msg"] == "job failed" && m["exit_code"] != float64(4) {
			t.Errorf("job summary %s", sc.Text())
		}
	}
	if got := strings.Join(summaries, " "); got != "ok.sh=0 fail.sh=4 after.sh=0" {
		t.Fatalf("summaries %q; stderr:\n%s", got, stderr)
	}
}

func TestRunLocalQuietWritesNothingToStderr(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "a.sh", "echo hi\nexit 3\n")
	stdout, stderr, code := tether(t, dir, "run", "--local", "-q", "a.sh")
	if code != 3 || string(stdout) != "hi\n" || len(stderr) != 0 {
		t.Fatalf("code %d stdout %q stderr %q", code, stdout, stderr)
	}
}

func TestRunBadInputExits2(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "a.sh", "echo hi\n")
	cases := map[string][]string{
		"no scripts":     {"run", "--local"},
		"unknown flag":   {"run", "--local", "--frobnicate", "a.sh"},
		"missing script": {"run", "--local", "missing.sh"},
		"missing after":  {"run", "--local", "a.sh", "--after", "nope.sh"},
		"a directory":    {"run", "--local", "."},
		"two backends":   {"run", "--local", "--docker", "a.sh"},
		"no backend":     {"run", "a.sh"},
		"bad env":        {"run", "--local", "--env", "NOEQUALS", "a.sh"},
		"shim's env":     {"run", "--local", "--env", "TETHER_SHELL=/bin/false", "a.sh"},
		"bad log format": {"run", "--local", "--log-format", "xml", "a.sh"},
		"unknown cmd":    {"frob"},
		"no command":     {},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := tether(t, dir, args...)
			if code != 2 || len(stdout) != 0 || len(stderr) == 0 {
				t.Fatalf("code %d stdout %q stderr %q, want 2 and a message", code, stdout, stderr)
			}
		})
	}
	_, stderr, _ := tether(t, dir, "run", "--local", "missing.sh")
	if !strings.Contains(string(stderr), "missing.sh") {
		t.Fatalf("message does not name the missing file: %s", stderr)
	}
}

func TestHelpAndVersion(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"--help"}, {"help"}, {"help", "run"}, {"run", "--help"}, {"run", "-h"}} {
		stdout, stderr, code := tether(t, dir, args...)
		if code != 0 || !strings.Contains(string(stdout), "Usage") || len(stderr) != 0 {
			t.Fatalf("%v: code %d stdout %q stderr %q", args, code, stdout, stderr)
		}
	}
	stdout, _, _ := tether(t, dir, "run", "--help")
	for _, flag := range []string{"--local", "--after", "-q, --quiet", "-v, --verbose", "--log-format", "--shim", "--image", "-n, --namespace", "--timeout", "--ttl", "--env", "--kubeconfig", "--context", "--helper-image", "--keep", "--idle-timeout", "--docker", "--restricted", "--run-as-user", "--read-only-root"} {
		if !strings.Contains(string(stdout), "\n  "+flag+" ") && !strings.Contains(string(stdout), "\n  "+flag+"\n") {
			t.Errorf("run --help does not document %s", flag)
		}
	}
	stdout, _, code := tether(t, dir, "version")
	if code != 0 || !strings.HasPrefix(string(stdout), "tether ") {
		t.Fatalf("version: %d %q", code, stdout)
	}
}

func TestRunLocalMissingShimNamesMakeBuild(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "a.sh", "echo hi\n")
	_, stderr, code := tether(t, dir, "run", "--local", "--shim", filepath.Join(dir, "no-shim"), "a.sh")
	if code == 0 || !strings.Contains(string(stderr), "make build") {
		t.Fatalf("code %d stderr %s", code, stderr)
	}
}

// startTether starts tether in the background and returns it with a
// buffer that collects its stdout.
func startTether(t *testing.T, dir string, args ...string) (*exec.Cmd, *lockedBuf, *lockedBuf) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "tether"), args...)
	cmd.Dir = dir
	var out, errb lockedBuf
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, &out, &errb
}

func TestSIGINTCancelsTheJobGracefully(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "long.sh", "trap 'echo terminated; exit 143' TERM\necho started\nsleep 60 & wait $!\n")
	writeScript(t, dir, "after.sh", "echo cleanup\n")
	cmd, out, errb := startTether(t, dir, "run", "--local", "long.sh", "--after", "after.sh")
	out.waitFor(t, "started\n")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	if code != 143 || out.String() != "started\nterminated\ncleanup\n" {
		t.Fatalf("exit %d (%v) stdout %q stderr %s", code, err, out.String(), errb.String())
	}
	if !strings.Contains(errb.String(), "cancel") {
		t.Fatalf("stderr does not mention the cancel: %s", errb.String())
	}
}

func TestSecondSignalExitsAtOnce(t *testing.T) {
	dir := t.TempDir()
	// Ignores TERM: a graceful cancel would wait for the shim's grace.
	writeScript(t, dir, "stubborn.sh", "trap '' TERM\necho started\nwhile :; do sleep 0.1; done\n")
	cmd, out, errb := startTether(t, dir, "run", "--local", "stubborn.sh")
	out.waitFor(t, "started\n")
	_ = cmd.Process.Signal(syscall.SIGINT)
	// The second signal once the first is handled (two signals sent
	// before tether reads one can reach it as one).
	errb.waitFor(t, "cancelling the job")
	_ = cmd.Process.Signal(syscall.SIGINT)
	_ = cmd.Wait()
	// 130 is the second signal's exit: the graceful cancel of a script
	// that ignores TERM would end with the shim's kill after its grace.
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(errb.String(), "again: exiting now") {
		t.Fatalf("exit %d, want 130 from the second signal; stderr %s", code, errb.String())
	}
}

type lockedBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *lockedBuf) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(b.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("never saw %q; got %q", s, b.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRunLocalTimeoutStopsTheJob(t *testing.T) {
	dir := t.TempDir()
	// Ending at the timeout, not the script's end (exit 0 after 30 s),
	// gives the deadline's exit code.
	writeScript(t, dir, "slow.sh", "echo started\nsleep 30\n")
	stdout, stderr, code := tether(t, dir, "run", "--local", "--timeout", "1s", "slow.sh")
	if code != 124 || string(stdout) != "started\n" {
		t.Fatalf("exit %d stdout %q stderr %s, want 124 (deadline)", code, stdout, stderr)
	}
	if !strings.Contains(string(stderr), "deadline") {
		t.Fatalf("stderr does not say why: %s", stderr)
	}
}

// When --timeout stops the job, the after-scripts still run (within
// --after-timeout) and tether exits 124; --after-timeout 0 skips them.
func TestRunLocalTimeoutStillRunsAfterScripts(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "slow.sh", "echo started\nsleep 30\necho never\n")
	writeScript(t, dir, "after.sh", "echo after-ran\n")
	stdout, stderr, code := tether(t, dir, "run", "--local", "--timeout", "1s", "slow.sh", "--after", "after.sh")
	if code != 124 || string(stdout) != "started\nafter-ran\n" {
		t.Fatalf("exit %d stdout %q stderr %s, want 124 and the after-script's output", code, stdout, stderr)
	}
	stdout, stderr, code = tether(t, dir, "run", "--local", "--timeout", "1s", "--after-timeout", "0", "slow.sh", "--after", "after.sh")
	if code != 124 || string(stdout) != "started\n" {
		t.Fatalf("--after-timeout 0: exit %d stdout %q stderr %s, want 124 and no after-script", code, stdout, stderr)
	}
}

func TestRunLocalEnvAndOddPaths(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dir with spaces")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeScript(t, dir, "a b.sh", "echo \"$GREETING $WHO\"\n")
	writeScript(t, dir, "{json}.sh", "echo brace\n")
	stdout, stderr, code := tether(t, dir, "run", "--local", "--env", "GREETING=hello", "--env", "WHO=a=b c", "a b.sh", "{json}.sh")
	if code != 0 || string(stdout) != "hello a=b c\nbrace\n" {
		t.Fatalf("code %d stdout %q stderr %s", code, stdout, stderr)
	}
}
