package shim_test

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/tether-ci/tether/protocol"
)

// unreadIn returns the bytes waiting in the pipe f is an end of.
func unreadIn(t *testing.T, f *os.File) int {
	t.Helper()
	sc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int32
	var errno syscall.Errno
	if err := sc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
	}); err != nil || errno != 0 {
		t.Fatalf("FIONREAD: %v %v", err, errno)
	}
	return int(n)
}

// settled waits until the unread bytes of f's pipe stay the same for a
// while and returns them.
func settled(t *testing.T, f *os.File) int {
	t.Helper()
	last := -1
	for stable := 0; stable < 4; {
		time.Sleep(50 * time.Millisecond)
		n := unreadIn(t, f)
		if n == last {
			stable++
		} else {
			stable = 0
		}
		last = n
	}
	return last
}

// More resumes than the shim keeps pile up while its stdout is blocked (a
// replay stalled in a full pipe, the client's connections breaking one
// after another): the shim says so on stderr, answers the one asking for
// the earliest offset and the newest, and the records after the answers
// run from the earliest offset to the end without a gap.
func TestResumesPilingUpCollapse(t *testing.T) {
	const piled = 1000 // well over the shim's bound of 256
	dir := t.TempDir()
	cmd := exec.Command(shimBin, "--replay-bytes=33554432")
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	stdinR, stdin, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout = stdinR, stdoutW
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdinR.Close()
	stdoutW.Close()
	t.Cleanup(func() {
		stdin.Close()
		stdout.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if b, _ := os.ReadFile(stderr.Name()); t.Failed() {
			t.Logf("shim stderr:\n%s", tail(b, 4000))
		}
	})
	sess := newResumeSession(t, stdin, stdout)
	send, next, resumed := sess.send, sess.next, sess.resumed
	original, end := sess.runOriginal(dir)

	// A replay from 0 fills the pipe nobody reads; the shim then waits in
	// its write, and the resumes pile up behind it.
	send(protocol.Command{Cmd: protocol.CmdResume, Nonce: "a", From: 0})
	if n := resumed(next()); n != "a" {
		t.Fatalf("resumed %q, want a", n)
	}
	if settled(t, stdout) == 0 {
		t.Fatal("test setup: the replay does not fill stdout's pipe")
	}
	var mid int64
	for seq := range original {
		if seq <= end/2 && seq > mid {
			mid = seq
		}
	}
	from := map[string]int64{}
	for i := range piled {
		nonce := fmt.Sprint("n", i)
		from[nonce] = mid
		if i == 0 {
			from[nonce] = 0
		}
		send(protocol.Command{Cmd: protocol.CmdResume, Nonce: nonce, From: from[nonce]})
	}
	if n := settled(t, stdin); n != 0 {
		t.Fatalf("test setup: the shim left %d bytes of the resumes unread", n)
	}

	// Every batch of answers is followed by the records from the smallest
	// offset they asked for, or from where the replay was when that is
	// earlier, to the end, without a gap.
	want, batch := int64(0), int64(-1)
	var answered []string
	for want < end || batch >= 0 {
		r := next()
		if !r.Type.Sequenced() {
			n := resumed(r)
			answered = append(answered, n)
			if batch < 0 || from[n] < batch {
				batch = from[n]
			}
			continue
		}
		if batch >= 0 {
			want, batch = min(want, batch), -1
		}
		checkReplayed(t, original, r, want)
		want = r.Next()
	}
	// The earliest offset's resume and the newest are answered, in the
	// order they came; most of the others are not.
	newest := fmt.Sprint("n", piled-1)
	if !slices.Contains(answered, "n0") || !slices.Contains(answered, newest) || len(answered) > piled/2 ||
		!slices.IsSortedFunc(answered, func(a, b string) int { return cmp.Compare(len(a), len(b))*2 + cmp.Compare(a, b) }) {
		t.Fatalf("answered %d resumes %v; want n0, %s and few others, in order", len(answered), answered, newest)
	}

	sess.exit(cmd)
	b, err := os.ReadFile(stderr.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "resume commands piled up unanswered") || !strings.Contains(string(b), "dropped=") {
		t.Fatalf("the shim did not say the resumes collapsed; stderr:\n%s", tail(b, 2000))
	}
}
