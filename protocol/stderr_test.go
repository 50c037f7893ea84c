package protocol

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestStderrRecords interleaves stdout and stderr output, as the shim does
// for a command that keeps stderr apart, and checks that a decoder gets
// each stream back exactly, in records of the right types, with offsets
// that form one sequenced stream.
func TestStderrRecords(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 33))
	enc := NewEncoder()
	var stream, wantOut, wantErr []byte
	for range 200 {
		data := genOutput(rng, 1+rng.IntN(3*MaxRecord))
		switch rng.IntN(3) {
		case 0:
			stream = enc.AppendStderr(stream, data)
			wantErr = append(wantErr, data...)
		case 1:
			stream = enc.AppendOutput(stream, data)
			wantOut = append(wantOut, data...)
		default:
			stream = enc.AppendBlocks(stream, data)
			wantOut = append(wantOut, data...)
		}
	}
	if int64(len(stream)) != enc.Offset() {
		t.Fatalf("encoder offset %d, stream of %d bytes", enc.Offset(), len(stream))
	}
	dec := NewDecoder(bytes.NewReader(stream))
	var gotOut, gotErr []byte
	var next int64
	for {
		rec, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("at offset %d: %v", next, err)
		}
		if rec.Seq != next {
			t.Fatalf("record at offset %d, want %d", rec.Seq, next)
		}
		next = rec.Next()
		switch {
		case rec.Type.IsStderr():
			if rec.Type == TypeStderr && !bytes.HasSuffix(rec.Payload, []byte("\n")) {
				t.Fatalf("an O record's payload %q does not end its line", rec.Payload)
			}
			gotErr = append(gotErr, rec.Payload...)
		case rec.Type.IsOutput():
			gotOut = append(gotOut, rec.Payload...)
		default:
			t.Fatalf("unexpected %s record", rec.Type)
		}
	}
	if !bytes.Equal(gotOut, wantOut) {
		t.Errorf("stdout differs: got %d bytes, want %d", len(gotOut), len(wantOut))
	}
	if !bytes.Equal(gotErr, wantErr) {
		t.Errorf("stderr differs: got %d bytes, want %d", len(gotErr), len(wantErr))
	}
}

// TestStderrRecordShapes checks the exact records of stderr output: a
// line, an escaped one, a partial line, and a line longer than a record.
func TestStderrRecordShapes(t *testing.T) {
	enc := NewEncoder()
	got := string(enc.AppendStderr(nil, []byte("warning: x\nC:\\dir\xff\nno newline")))
	want := "O 0 warning: x\nO 15 C:\\\\dir\\xff\nP 32 no newline\n"
	if got != want {
		t.Fatalf("AppendStderr =\n%q\nwant\n%q", got, want)
	}
	long := enc.AppendStderr(nil, append(bytes.Repeat([]byte("e"), MaxRecord), '\n'))
	lines := strings.SplitAfter(string(long), "\n")
	if len(lines) != 3 || lines[2] != "" || lines[0][0] != 'P' || lines[1][0] != 'O' {
		t.Fatalf("a long stderr line became %d records starting %q, %q", len(lines)-1, lines[0][:1], lines[1][:1])
	}
	for _, l := range lines[:2] {
		if len(l) > MaxRecord {
			t.Fatalf("a record of %d bytes", len(l))
		}
	}
	for _, tc := range []struct {
		line    string
		typ     Type
		payload string
	}{
		{"O 7 oops\n", TypeStderr, "oops\n"},
		{"P 7 oops\n", TypeStderrPartial, "oops"},
		{"O 7 a\\\\b\\r\\x00\n", TypeStderr, "a\\b\r\x00\n"},
		{"P 7 \\xe9\n", TypeStderrPartial, "\xe9"},
	} {
		rec, _, err := Parse([]byte(tc.line), nil)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.line, err)
		}
		if rec.Type != tc.typ || rec.Seq != 7 || string(rec.Payload) != tc.payload || rec.Size != len(tc.line) {
			t.Errorf("Parse(%q) = %+v, want type %s payload %q", tc.line, rec, tc.typ, tc.payload)
		}
	}
	for _, bad := range []string{"O - x\n", "P 0 bad\\q\n", "O 01 x\n"} {
		if _, _, err := Parse([]byte(bad), nil); !errors.Is(err, ErrMalformed) {
			t.Errorf("Parse(%q) = %v, want ErrMalformed", bad, err)
		}
	}
	if _, err := enc.AppendJSON(nil, TypeStderr, struct{}{}); err == nil {
		t.Error("AppendJSON accepted a stderr record type")
	}
}

// TestStderrCommandField checks the command field that asks for stderr
// apart: valid values, the commands it belongs to, and that a run command
// with it is sent as JSON, not as a plain path.
func TestStderrCommandField(t *testing.T) {
	c, err := ParseCommand([]byte(`{"cmd":"job","id":"j","scripts":["/s"],"stderr":"separate"}`))
	if err != nil || c.Stderr != StderrSeparate {
		t.Fatalf("ParseCommand = %+v, %v", c, err)
	}
	for _, ok := range []Command{
		{Cmd: CmdJob, ID: "j", Scripts: []string{"/s"}, Stderr: StderrMerged},
		{Cmd: CmdRun, Script: "/s", Stderr: StderrSeparate},
	} {
		if err := ok.Validate(); err != nil {
			t.Errorf("Validate(%+v): %v", ok, err)
		}
	}
	for _, bad := range []Command{
		{Cmd: CmdJob, ID: "j", Scripts: []string{"/s"}, Stderr: "apart"},
		{Cmd: CmdPing, Stderr: StderrSeparate},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("Validate(%+v) accepted it", bad)
		}
	}
	line, err := AppendCommand(nil, Command{Cmd: CmdRun, Script: "/s", Stderr: StderrSeparate})
	if err != nil || string(line) != "\x18"+`{"cmd":"run","script":"/s","stderr":"separate"}`+"\n" {
		t.Fatalf("AppendCommand = %q, %v", line, err)
	}
}
