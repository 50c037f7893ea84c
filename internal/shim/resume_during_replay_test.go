package shim_test

import (
	"bytes"
	"io"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tether-ci/tether/protocol"
)

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// A resume that arrives while the shim replays the stream for an earlier
// one (a client whose connection broke during the replay) is answered
// before that replay ends, and the records after each answer still run
// from its offset (or earlier) to the end without a gap, byte for byte the
// original records: the first replay starts again from the second resume's
// offset when that is earlier, and simply goes on when it is later. The
// test stops reading the shim's stdout, so the first replay (8 MiB) stalls
// in the full pipe, and sends the second resume then.
func TestResumeDuringAReplayIsAnsweredBeforeItEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		late bool // the second resume asks for records near the end
	}{
		{"memory", []string{"--replay-bytes=33554432"}, false},
		{"spool", []string{"--spool-dir", "SPOOL"}, false},
		{"memory-late", []string{"--replay-bytes=33554432"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := tc.args
			if args[0] == "--spool-dir" {
				args = []string{"--spool-dir", filepath.Join(dir, "spool")}
			}
			cmd := exec.Command(shimBin, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				if t.Failed() {
					t.Logf("shim stderr:\n%s", tail(stderr.Bytes(), 4000))
				}
			})
			in := &countingReader{r: stdout}
			sess := newResumeSession(t, stdin, in)
			send, next, resumed := sess.send, sess.next, sess.resumed
			original, end := sess.runOriginal(dir) // lines and blocks, 8 MiB

			// Resume a: its replay fills the pipe nobody reads; then b.
			send(protocol.Command{Cmd: protocol.CmdResume, Nonce: "a", From: 0})
			if n := resumed(next()); n != "a" {
				t.Fatalf("resumed %q, want a", n)
			}
			atA := in.n
			fromB := int64(0)
			if tc.late {
				fromB = end
				for seq := range original {
					if seq >= end*7/8 && seq < fromB {
						fromB = seq
					}
				}
			}
			send(protocol.Command{Cmd: protocol.CmdResume, Nonce: "b", From: fromB})

			// Replay a: contiguous from 0, until b's answer.
			want := int64(0)
			for {
				r := next()
				if !r.Type.Sequenced() {
					if n := resumed(r); n != "b" {
						t.Fatalf("resumed %q, want b", n)
					}
					break
				}
				checkReplayed(t, original, r, want)
				want = r.Next()
			}
			replayedA := want
			if want >= end {
				t.Fatalf("the answer to the second resume came after the whole first replay (%d bytes of it read after %d bytes of stdout)",
					want, in.n-atA)
			}
			// After b's answer: records from b's offset, or from where a's
			// replay was when that is earlier (a's client then misses
			// nothing either), to the end.
			if want = min(fromB, replayedA); tc.late && want != replayedA {
				t.Fatalf("test setup: the second resume's offset %d is not past the first replay's position %d", fromB, replayedA)
			}
			for want < end {
				r := next()
				checkReplayed(t, original, r, want)
				want = r.Next()
			}
			t.Logf("the second answer came after %d bytes of the first replay of %d", replayedA, end)
			sess.exit(cmd)
		})
	}
}

// checkReplayed fails unless r is the original record at offset want.
func checkReplayed(t *testing.T, original map[int64]protocol.Record, r protocol.Record, want int64) {
	t.Helper()
	o, ok := original[r.Seq]
	if r.Seq != want || !ok || o.Type != r.Type || !bytes.Equal(o.Payload, r.Payload) {
		t.Fatalf("replayed record %s at offset %d (%d bytes), want the original record at offset %d", r.Type, r.Seq, len(r.Payload), want)
	}
}
