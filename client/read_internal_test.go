package client

import (
	"io"
	"testing"
)

// The pending-output buffer is sized by need: after a burst it is kept
// while writes stay big or only now and then small, and released once they
// stay small.
func TestPendingBufferReleasedWhenOutputSlows(t *testing.T) {
	st := &stream{output: io.Discard}
	st.pending = append(make([]byte, 0, flushAt), make([]byte, flushAt)...)
	if err := st.flush(); err != nil {
		t.Fatal(err)
	}
	if cap(st.pending) < flushAt {
		t.Fatalf("a full buffer was released after a big write (cap %d)", cap(st.pending))
	}
	smallWrite := func() {
		t.Helper()
		st.pending = append(st.pending, "a short line\n"...)
		if err := st.flush(); err != nil {
			t.Fatal(err)
		}
	}
	smallWrite()
	if cap(st.pending) < flushAt {
		t.Fatalf("one small write after a big one released the buffer (cap %d): the next burst grows it again", cap(st.pending))
	}
	for range releaseAfter {
		smallWrite()
	}
	if cap(st.pending) > keepPending {
		t.Fatalf("after a small write the buffer keeps %d bytes, want at most %d", cap(st.pending), keepPending)
	}
}
