package gitlab

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/tether-ci/tether/protocol"
)

// recordingConn is a client.Conn that keeps what is written to it.
type recordingConn struct {
	bytes.Buffer
}

func (*recordingConn) Close() error { return nil }

func commandLine(t *testing.T, c protocol.Command) []byte {
	t.Helper()
	b, err := protocol.AppendCommand(nil, c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The tap finds where a stage's records start: the first resume command
// after the one asking for the stream's end, also when the job's other
// commands (a file whose path says "resume", the job) share its write,
// and every byte written reaches the connection.
func TestStartTapFindsTheStagesResume(t *testing.T) {
	var found []int64
	tap := &startTap{found: func(from int64) { found = append(found, from) }}
	conn := &recordingConn{}
	tc := &tappedConn{Conn: conn, tap: tap}
	var want bytes.Buffer
	write := func(p []byte) {
		t.Helper()
		want.Write(p)
		if n, err := tc.Write(p); err != nil || n != len(p) {
			t.Fatalf("write: %d, %v", n, err)
		}
	}
	write(commandLine(t, protocol.Command{Cmd: protocol.CmdResume, From: math.MaxInt64, Nonce: "end"}))
	file := commandLine(t, protocol.Command{Cmd: protocol.CmdFile, Path: "/tether/files/\"resume\"", Data: "dHJ1ZQo=", SHA256: strings.Repeat("0", 64)})
	// The file command split across two writes, then the stage's resume
	// and its job in one.
	write(file[:10])
	write(file[10:])
	var one []byte
	one = append(one, commandLine(t, protocol.Command{Cmd: protocol.CmdResume, From: 896, Nonce: "n"})...)
	one = append(one, commandLine(t, protocol.Command{Cmd: protocol.CmdResume, From: 1000, Nonce: "later"})...)
	one = append(one, commandLine(t, protocol.Command{Cmd: protocol.CmdJob, ID: "j", Scripts: []string{"/tether/files/resume"}})...)
	write(one)
	if len(found) != 1 || found[0] != 896 {
		t.Fatalf("found %v, want [896]", found)
	}
	if !bytes.Equal(conn.Bytes(), want.Bytes()) {
		t.Fatalf("the connection got %q, want %q", conn.Bytes(), want.Bytes())
	}
}
