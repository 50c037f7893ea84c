package stage

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Frames carry any bytes, up to MaxFrame, in order; a FrameWriter splits
// a larger write; a stream cut inside a frame is an error, not a frame.
func TestFrames(t *testing.T) {
	var b bytes.Buffer
	big := bytes.Repeat([]byte{0, 0xff, '\n'}, MaxFrame/3+10)
	if err := WriteFrame(&b, FrameStdout, []byte("a\x00\xff")); err != nil {
		t.Fatal(err)
	}
	if n, err := (FrameWriter{W: &b, Type: FrameStderr}).Write(big); err != nil || n != len(big) {
		t.Fatalf("FrameWriter: %d, %v", n, err)
	}
	if err := WriteEncoded(&b, FrameStarted, Started{Job: "step-1", From: 42}); err != nil {
		t.Fatal(err)
	}
	typ, p, err := ReadFrame(&b)
	if err != nil || typ != FrameStdout || string(p) != "a\x00\xff" {
		t.Fatalf("first frame %q %q %v", typ, p, err)
	}
	var got []byte
	for range 2 {
		typ, p, err := ReadFrame(&b)
		if err != nil || typ != FrameStderr || len(p) > MaxFrame {
			t.Fatalf("stderr frame %q (%d bytes) %v", typ, len(p), err)
		}
		got = append(got, p...)
	}
	if !bytes.Equal(got, big) {
		t.Fatal("the large write did not arrive whole")
	}
	var st Started
	if typ, p, err := ReadFrame(&b); err != nil || typ != FrameStarted || st.UnmarshalBinary(p) != nil || st != (Started{Job: "step-1", From: 42}) {
		t.Fatalf("started frame %q %q %v: %+v", typ, p, err, st)
	}
	if _, _, err := ReadFrame(&b); err != io.EOF {
		t.Fatalf("at the end: %v, want io.EOF", err)
	}
	if _, _, err := ReadFrame(strings.NewReader("o\x00\x00\x00\x05ab")); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a cut frame: %v, want io.ErrUnexpectedEOF", err)
	}
	if _, _, err := ReadFrame(strings.NewReader("o\xff\xff\xff\xff")); err == nil {
		t.Fatal("a frame over the limit was accepted")
	}
}

// A Request and a Started come back as they were encoded, any bytes in
// their strings; a payload cut short, with bytes after it, or with a
// count over its length is an error.
func TestEncodings(t *testing.T) {
	req := Request{Args: []string{"--config", "", "s p\x00c\xff"}, Env: []string{"A=1", "B=\n=é"}, Dir: "/builds/a b"}
	b, err := req.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got Request
	if err := got.UnmarshalBinary(b); err != nil || strings.Join(got.Args, "|") != strings.Join(req.Args, "|") || strings.Join(got.Env, "|") != strings.Join(req.Env, "|") || got.Dir != req.Dir || len(got.Args) != 3 {
		t.Fatalf("request %+v, %v; want %+v", got, err, req)
	}
	for i := range len(b) {
		if err := got.UnmarshalBinary(b[:i]); err == nil {
			t.Fatalf("a request cut to %d of %d bytes decoded", i, len(b))
		}
	}
	if err := got.UnmarshalBinary(append(b, 0)); err == nil {
		t.Fatal("a request with a trailing byte decoded")
	}
	if err := got.UnmarshalBinary([]byte{0xff, 0xff, 0xff, 0xff, 0x0f}); err == nil {
		t.Fatal("a count over the payload's length decoded")
	}
	for _, s := range []Started{{Job: "step_script-1", From: 0}, {Job: "j", From: 1 << 40}} {
		b, _ := s.AppendBinary(nil)
		var got Started
		if err := got.UnmarshalBinary(b); err != nil || got != s {
			t.Fatalf("started %+v, %v; want %+v", got, err, s)
		}
		if err := got.UnmarshalBinary(b[:len(b)-1]); err == nil {
			t.Fatal("a cut started frame decoded")
		}
	}
}

// The job's directory is named from the user, runner and job, under
// TMPDIR; only a directory of this user's, closed to others, is used.
func TestDir(t *testing.T) {
	tmp := t.TempDir()
	env := map[string]string{"TMPDIR": tmp, "CUSTOM_ENV_CI_RUNNER_ID": "7", "CUSTOM_ENV_CI_JOB_ID": "12/../x"}
	dir, err := Dir(func(k string) string { return env[k] })
	if err != nil || filepath.Dir(dir) != tmp || !strings.HasSuffix(dir, "-r7-j12____x") {
		t.Fatalf("Dir: %q, %v", dir, err)
	}
	if _, err := Dir(func(string) string { return "" }); err == nil {
		t.Fatal("Dir without a job ID")
	}
	if err := MakeDir(dir); err != nil {
		t.Fatal(err)
	}
	if err := MakeDir(dir); err != nil {
		t.Fatalf("MakeDir of its own directory again: %v", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := CheckDir(dir); err == nil {
		t.Fatal("a directory others may enter passed")
	}
	link := filepath.Join(tmp, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if err := CheckDir(link); err == nil {
		t.Fatal("a symbolic link passed")
	}
}
