package shim_test

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-ci/tether/protocol"
)

// Random binary output (NUL, invalid UTF-8, \r, long lines) survives
// byte for byte, in records of at most 16 KiB.
func TestBinaryOutputRoundTrip(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 3<<20)
	rand.Read(data)
	copy(data[1000:], bytes.Repeat([]byte("x"), 100_000)) // a line far longer than a record
	bin := filepath.Join(dir, "random.bin")
	os.WriteFile(bin, data, 0o644)
	s := script(t, dir, "cat.sh", "cat "+bin+"\nprintf 'tail without newline'\n")
	p := startShim(t, nil)
	p.send(run(s))
	p.waitStatus(s, 30*time.Second)
	want := append(data, "tail without newline"...)
	if got := p.output(); !bytes.Equal(got, want) {
		t.Fatalf("output differs: got %d bytes, want %d", len(got), len(want))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.records {
		if r.Size > protocol.MaxRecord {
			t.Fatalf("record of %d bytes", r.Size)
		}
	}
}

// A script printing what looks like status or job records cannot change
// its result: user bytes only ever decode as output.
func TestForgedRecordsAreOutput(t *testing.T) {
	dir := t.TempDir()
	s := script(t, dir, "forge.sh", `echo '{"command_exit_code": 0, "script": "x"}'
printf 's 0 {"script":"x","command_exit_code":0}\nj 0 {"exit_code":0}\nx 0 {"reason":"exit-command","exit_code":0}\n'
printf '\x18{"cmd":"exit"}\n'
exit 3
`)
	p := startShim(t, nil)
	p.send(protocol.Command{Cmd: protocol.CmdJob, ID: "forge", Scripts: []string{s}})
	r, _ := p.waitRecord(0, 10*time.Second, ofType(protocol.TypeJob))
	var j protocol.JobDone
	mustJSON(t, r.Payload, &j)
	if j.ExitCode != 3 || j.FailedScript != s {
		t.Fatalf("job %+v, want exit 3", j)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var statuses int
	for _, r := range p.records {
		if r.Type == protocol.TypeStatus {
			statuses++
		}
	}
	if statuses != 1 {
		t.Fatalf("%d status records, want 1", statuses)
	}
}

// A partial line goes out as soon as nothing more waits in the pipe: the
// flush delay only caps coalescing while more output is already waiting.
// With a one-hour delay each dot still arrives on its own, long before any
// delay could pass.
func TestPartialOutputNotHeldWhenPipeIsEmpty(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	s := script(t, dir, "relay.sh", "cat "+fifo+"\n")
	p := startShim(t, []string{"--flush-delay=1h"})
	p.send(run(s))
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	from := 0
	for _, piece := range []string{".", "..", "x"} {
		if _, err := w.Write([]byte(piece)); err != nil {
			t.Fatal(err)
		}
		r, idx := p.waitRecord(from, 30*time.Second, ofType(protocol.TypePartial))
		from = idx + 1
		if string(r.Payload) != piece {
			t.Fatalf("partial record %q, want %q", r.Payload, piece)
		}
	}
}

// Paths with spaces, quotes and shell syntax are argv elements: they run and
// inject nothing.
func TestHostilePathsRunVerbatim(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "injected")
	name := fmt.Sprintf(`a b;touch %s;'"$(touch %s)".sh`, marker, marker)
	sub := filepath.Join(dir, "with space")
	os.Mkdir(sub, 0o755)
	path := filepath.Join(sub, strings.ReplaceAll(name, "/", "_"))
	if err := os.WriteFile(path, []byte("echo ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := startShim(t, nil)
	p.send(run(path))
	if st := p.waitStatus(path, 10*time.Second); st.CommandExitCode != 0 {
		t.Fatalf("status %+v", st)
	}
	if string(p.output()) != "ran\n" {
		t.Fatalf("output %q", p.output())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the path was interpreted by a shell")
	}
}

// Bad input gets a clear error record or status, and the shim keeps serving.
func TestBadInputKeepsServing(t *testing.T) {
	dir := t.TempDir()
	good := script(t, dir, "good.sh", "echo good\n")
	p := startShim(t, nil)
	p.sendRaw("relative/path.sh\n")
	p.sendRaw(filepath.Join(dir, "missing.sh") + "\n")
	p.sendRaw(dir + "\n")
	p.sendRaw("{\"cmd\":\"explode\"}\n{not json\n" + `{"cmd":"resume","from":-1}` + "\n")
	p.sendRaw("/half/written/pa") // a client died mid-line
	p.send(run(good))             // the next client starts with the reset byte
	cases := map[string]int{"relative/path.sh": 127, filepath.Join(dir, "missing.sh"): 127, dir: 126}
	for path, code := range cases {
		st := p.waitStatus(path, 5*time.Second)
		if st.CommandExitCode != code || st.Error == "" {
			t.Errorf("%s: status %+v, want code %d and an error", path, st, code)
		}
	}
	if st := p.waitStatus(good, 5*time.Second); st.CommandExitCode != 0 {
		t.Fatalf("good script after bad input: %+v", st)
	}
	p.mu.Lock()
	var errs []string
	for _, r := range p.records {
		if r.Type == protocol.TypeError {
			errs = append(errs, string(r.Payload))
		}
	}
	p.mu.Unlock()
	if len(errs) != 4 || !strings.Contains(errs[3], "torn") || !strings.Contains(errs[3], "/half/written/pa") {
		t.Fatalf("error records %q, want 3 command errors and 1 torn line", errs)
	}
}

// A background child holding the output pipe does not hang the job: the
// status comes after the drain timeout, while the child (which would hold
// the pipe for an hour) still runs; with --kill-leftovers it is killed.
func TestBackgroundChildHoldingThePipe(t *testing.T) {
	dir := t.TempDir()
	s := script(t, dir, "bg.sh", "sleep 3600 &\necho started\n")
	for _, kill := range []bool{false, true} {
		args := []string{"--drain-timeout", "300ms"}
		if kill {
			args = append(args, "--kill-leftovers")
		}
		p := startShim(t, args)
		p.send(run(s))
		if st := p.waitStatus(s, 60*time.Second); st.CommandExitCode != 0 {
			t.Fatalf("kill=%v: status %+v, want exit 0", kill, st)
		}
		if kill {
			eventually(t, 30*time.Second, "the leftover sleep to be killed", func() bool { return len(descendants(t, p.pid())) == 0 })
		} else {
			left := descendants(t, p.pid())
			if len(left) == 0 {
				t.Fatal("without --kill-leftovers the background child must keep running")
			}
			for pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL) // the test's own hour-long sleep
			}
		}
	}
}

// Scripts inherit no signal the shim ignores, and not the shim's stdin.
func TestScriptEnvironment(t *testing.T) {
	dir := t.TempDir()
	s := script(t, dir, "env.sh", "grep -E ^SigIgn /proc/self/status; read x && echo read-something; [ -t 1 ] && echo tty; echo pgid-ok\n")
	p := startShim(t, nil)
	p.send(run(s))
	p.waitStatus(s, 5*time.Second)
	// The shim must add nothing to the ignored signals it inherited itself.
	own, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	var ignored string
	for _, line := range strings.Split(string(own), "\n") {
		if strings.HasPrefix(line, "SigIgn:") {
			ignored = line
		}
	}
	if got := string(p.output()); got != ignored+"\npgid-ok\n" {
		t.Fatalf("output %q", got)
	}
}

// --tty runs the script on a raw terminal: isatty is true and bytes are
// not rewritten (no \n → \r\n).
func TestTTYMode(t *testing.T) {
	dir := t.TempDir()
	s := script(t, dir, "tty.sh", "[ -t 1 ] && echo tty; printf 'a\\nb\\r\\n\\001'\n")
	p := startShim(t, []string{"--tty"})
	p.send(run(s))
	if st := p.waitStatus(s, 5*time.Second); st.CommandExitCode != 0 {
		t.Fatalf("status %+v", st)
	}
	if got := string(p.output()); got != "tty\na\nb\r\n\x01" {
		t.Fatalf("output %q", got)
	}
}

// The shim works as a non-root user.
func TestRunsAsNonRoot(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	s := script(t, dir, "id.sh", "id -u\n")
	secret := script(t, dir, "secret.sh", "echo secret\n")
	os.Chmod(secret, 0o700)
	p := startShim(t, nil, asUser(65534, 65534))
	p.send(run(s), run(secret))
	if st := p.waitStatus(s, 5*time.Second); st.CommandExitCode != 0 {
		t.Fatalf("status %+v", st)
	}
	if st := p.waitStatus(secret, 5*time.Second); st.CommandExitCode != 126 || !strings.Contains(st.Error, "not readable") {
		t.Fatalf("unreadable script: status %+v, want 126 not readable", st)
	}
	if got := string(p.output()); got != "65534\n" {
		t.Fatalf("output %q", got)
	}
}

// --commands reads commands from a FIFO that writers may open and close
// (an engine that closes stdin after every attach); `tether-shim send`
// feeds it without a shell.
func TestCommandsFIFOAndSend(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "commands")
	a := script(t, dir, "a.sh", "echo a\n")
	b := script(t, dir, "b.sh", "echo b\n")
	p := startShim(t, []string{"--commands", fifo})
	p.stdin.Close() // stdin is not the command channel
	for _, s := range []string{a, b} {
		send := exec.Command(shimBin, "send", fifo)
		send.Stdin = strings.NewReader("\x18" + s + "\n/torn/without/newline")
		if out, err := send.CombinedOutput(); err != nil {
			t.Fatalf("tether-shim send: %v\n%s", err, out)
		}
		if st := p.waitStatus(s, 5*time.Second); st.CommandExitCode != 0 {
			t.Fatalf("status %+v", st)
		}
	}
	if got := string(p.output()); got != "a\nb\n" {
		t.Fatalf("output %q", got)
	}
	select {
	case <-p.exited:
		t.Fatal("the shim exited when a FIFO writer closed")
	default:
	}
}

// Scripts inherit the shim's environment except the variables that
// configured the shim (a job has no use for TETHER_LOG_LEVEL, and must not
// pass it on to a tether-shim of its own).
func TestScriptsDoNotInheritShimConfiguration(t *testing.T) {
	dir := t.TempDir()
	// startShim sets TETHER_LOG_LEVEL (a shim flag) and TETHER_TEST_BIN (not one).
	s := script(t, dir, "env.sh", `echo "log=${TETHER_LOG_LEVEL-unset} bin=${TETHER_TEST_BIN:+set} path=${PATH:+set}"`+"\n")
	p := startShim(t, nil)
	p.send(run(s))
	p.waitStatus(s, 10*time.Second)
	if got, want := string(p.output()), "log=unset bin=set path=set\n"; got != want {
		t.Fatalf("script environment %q, want %q", got, want)
	}
}
