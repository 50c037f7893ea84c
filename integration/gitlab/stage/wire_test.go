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
	if err := WriteJSON(&b, FrameStarted, Started{Job: "step-1", From: 42}); err != nil {
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
	if typ, p, err := ReadFrame(&b); err != nil || typ != FrameStarted || string(p) != `{"job":"step-1","from":42}` {
		t.Fatalf("started frame %q %q %v", typ, p, err)
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
