package shim_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"testing"
	"time"

	"github.com/tether-ci/tether/protocol"
)

// resumeSession is what the resume tests do with a shim process they
// started themselves: send commands to its stdin, decode its stdout.
type resumeSession struct {
	t     *testing.T
	stdin io.WriteCloser
	dec   *protocol.Decoder
}

func newResumeSession(t *testing.T, stdin io.WriteCloser, stdout io.Reader) *resumeSession {
	return &resumeSession{t: t, stdin: stdin, dec: protocol.NewDecoder(stdout)}
}

// send writes one command.
func (s *resumeSession) send(c protocol.Command) {
	s.t.Helper()
	line, err := protocol.AppendCommand(nil, c)
	if err == nil {
		_, err = s.stdin.Write(line)
	}
	if err != nil {
		s.t.Fatal(err)
	}
}

// next returns the next record, its payload its own.
func (s *resumeSession) next() protocol.Record {
	s.t.Helper()
	r, err := s.dec.Next()
	if err != nil {
		s.t.Fatalf("record stream: %v", err)
	}
	r.Payload = bytes.Clone(r.Payload)
	return r
}

// runOriginal runs a script printing 8 MiB (lines and blocks) and reads its
// records up to its status: the original stream, by sequence number, and
// the offset after it.
func (s *resumeSession) runOriginal(dir string) (original map[int64]protocol.Record, end int64) {
	s.t.Helper()
	s.send(run(script(s.t, dir, "big.sh", "yes 'a line of the job output' | head -c 8388608\n")))
	original = map[int64]protocol.Record{}
	for {
		r := s.next()
		original[r.Seq] = r
		end = r.Next()
		if r.Type == protocol.TypeStatus {
			return original, end
		}
	}
}

// resumed returns the nonce of r, which must be a resumed record without
// an error.
func (s *resumeSession) resumed(r protocol.Record) string {
	s.t.Helper()
	var ans protocol.Resumed
	if r.Type != protocol.TypeResumed || json.Unmarshal(r.Payload, &ans) != nil || ans.Error != "" {
		s.t.Fatalf("record %s %q, want a resumed record without error", r.Type, r.Payload)
	}
	return ans.Nonce
}

// exit sends the exit command, closes stdin, reads up to the exit record
// and waits for the shim process cmd to end.
func (s *resumeSession) exit(cmd *exec.Cmd) {
	s.t.Helper()
	s.send(protocol.Command{Cmd: protocol.CmdExit})
	_ = s.stdin.Close()
	for {
		if r := s.next(); r.Type == protocol.TypeExit {
			break
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		s.t.Fatal("the shim did not exit after the exit command")
	}
}
