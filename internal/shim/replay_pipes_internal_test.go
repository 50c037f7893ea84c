package shim

import (
	"bytes"
	"math/rand/v2"
	"syscall"
	"testing"
)

// The pipe-backed window keeps at least its size, replays any retained
// range exactly (and again: a replay puts the bytes back), keeps working
// after a replay, and holds a bounded number of pipes.
func TestPipeStoreWindow(t *testing.T) {
	const window = 3 << 20
	s, ok := newPipeStore(window)
	if !ok {
		t.Fatal("cannot make 1 MiB pipes: this test needs the default pipe limits (or root)")
	}
	defer s.Close()
	var src [2]int
	if err := syscall.Pipe2(src[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(src[0])
	defer syscall.Close(src[1])
	rng := rand.New(rand.NewPCG(1, 2))
	var all []byte
	add := func() {
		b := make([]byte, 1+rng.IntN(40<<10))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		if rng.IntN(2) == 0 {
			if err := s.Append(b); err != nil {
				t.Fatal(err)
			}
		} else {
			if n, err := syscall.Write(src[1], b); err != nil || n != len(b) {
				t.Fatalf("write %d bytes to the source pipe: %d, %v", len(b), n, err)
			}
			if err := s.AppendFrom(src[0], len(b)); err != nil {
				t.Fatal(err)
			}
		}
		all = append(all, b...)
	}
	check := func() {
		t.Helper()
		end := int64(len(all))
		if s.end != end {
			t.Fatalf("store end %d, want %d", s.end, end)
		}
		if oldest := s.Oldest(); oldest > max(end-window, 0) {
			t.Fatalf("oldest retained %d: less than the %d-byte window of %d bytes", oldest, window, end)
		}
		if len(s.segs) > window/s.size*4+2 {
			t.Fatalf("%d segments for a %d-byte window", len(s.segs), window)
		}
		for range 5 {
			from := s.Oldest() + rng.Int64N(end-s.Oldest()+1)
			to := from + rng.Int64N(end-from+1)
			var got bytes.Buffer
			if err := s.CopyRange(&got, from, to); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), all[from:to]) {
				t.Fatalf("replay of [%d, %d) differs", from, to)
			}
		}
		var got bytes.Buffer
		if err := s.CopyRange(&got, 0, end); (err == nil) != (s.Oldest() == 0) {
			t.Fatalf("replay from 0 with oldest %d: %v", s.Oldest(), err)
		}
	}
	for len(all) < 12<<20 {
		add()
		if rng.IntN(40) == 0 {
			check()
		}
	}
	check()
}
