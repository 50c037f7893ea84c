package local

import (
	"errors"
	"io"
	"os"
	"testing"
	"time"
)

// The raw-read path keeps os.File.Read's contract on a pipe: bytes as they
// come, a wait in the poller while the pipe is empty, a read deadline that
// interrupts that wait, io.EOF once every writer closed it, and os.ErrClosed
// after Close.
func TestNonblockingReaderKeepsFileReadContract(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	r := newNonblockingReader(pr)
	if _, ok := r.(nonblockingReader); !ok {
		t.Fatalf("a pipe's read end got %T, want the raw reader", r)
	}
	buf := make([]byte, 16)

	if _, err := pw.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "abc" {
		t.Fatalf("read %q, %v; want \"abc\"", buf[:n], err)
	}

	// An empty pipe: the read waits until a writer writes.
	go func() {
		time.Sleep(50 * time.Millisecond)
		_, _ = pw.Write([]byte("later"))
	}()
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "later" {
		t.Fatalf("read %q, %v; want \"later\"", buf[:n], err)
	}

	// A deadline in the past interrupts a waiting read.
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(buf)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := pr.SetReadDeadline(time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("interrupted read: %v, want os.ErrDeadlineExceeded", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a read deadline in the past did not interrupt the read")
	}
	if err := pr.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}

	// No empty read: a zero-length buffer reads nothing, at once.
	if n, err := r.Read(nil); n != 0 || err != nil {
		t.Fatalf("empty read: %d, %v", n, err)
	}

	if _, err := pw.Write([]byte("last")); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "last" {
		t.Fatalf("read %q, %v; want \"last\"", buf[:n], err)
	}
	if n, err := r.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("after the writer closed: %d, %v; want io.EOF", n, err)
	}

	pr.Close()
	if _, err := r.Read(buf); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("read after Close: %v, want os.ErrClosed", err)
	}
}
