package shim

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/tether-ci/tether/protocol"
)

// Every replay mark is the start of a record, whichever way the records
// were written (output, held and plain JSON records around unsequenced
// ones, block records), and the marks stay bounded in number.
func TestReplayMarksAreRecordStarts(t *testing.T) {
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	stream := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(outR)
		stream <- b
	}()
	store := newMemoryStore(64 << 20)
	em := newEmitter(outW, store, slog.New(slog.DiscardHandler))
	srcR, srcW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer srcR.Close()
	defer srcW.Close()
	growPipe(srcW)
	src, ok := pipeOf(srcR)
	if !ok {
		t.Fatal("the source is not a pipe")
	}
	chunk := make([]byte, 200<<10)
	for i := range 40 {
		em.Hold(protocol.TypeBegin, protocol.Begin{Script: "/s"})
		em.Output(bytes.Repeat([]byte("a line of output\n"), 1000+i*97))
		em.Unsequenced(protocol.TypeAlive, protocol.Alive{Nonce: "n"})
		rand.Read(chunk)
		if _, err := srcW.Write(chunk); err != nil {
			t.Fatal(err)
		}
		if !em.Blocks(src, len(chunk)) {
			t.Fatal("Blocks refused a pipe stdout")
		}
		em.Hold(protocol.TypeStatus, protocol.Status{Script: "/s"})
		em.Record(protocol.TypeBegin, protocol.Begin{Script: "/t"})
	}
	em.Close(protocol.Exit{Reason: protocol.ReasonExitCommand})
	outW.Close()
	got := <-stream

	starts := map[int64]bool{}
	dec := protocol.NewDecoder(bytes.NewReader(got))
	for {
		rec, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Type.Sequenced() {
			starts[rec.Seq] = true
		}
	}
	if len(em.marks) < 100 {
		t.Fatalf("%d marks in a %d-byte stream: want one at least every %d bytes or so", len(em.marks), len(got), firstMarkGap)
	}
	for _, m := range em.marks {
		if !starts[m] {
			t.Fatalf("mark %d is not the start of a record", m)
		}
	}
}

// The marks of a long stream are thinned, not grown without bound, and
// those the store no longer retains are dropped first.
func TestReplayMarksStayBounded(t *testing.T) {
	for _, window := range []int64{0, 1 << 20} { // 0: the whole stream

		em := newEmitter(io.Discard, oldestStore{}, slog.New(slog.DiscardHandler))
		var off int64
		for range 5 * maxMarks {
			off += 70 << 10
			if window > 0 {
				em.store = oldestStore{oldest: max(0, off-window)}
			}
			em.mark(off)
		}
		if n := len(em.marks); n > maxMarks || n < 2 {
			t.Fatalf("window %d: %d marks, want 2 to %d", window, n, maxMarks)
		}
		if last := em.marks[len(em.marks)-1]; off-last >= em.markGap {
			t.Fatalf("window %d: last mark %d, gap %d: want one within the gap of the end %d", window, last, em.markGap, off)
		}
		// Dropping the marks outside a window is enough; only a whole
		// stream needs coarser ones.
		if grown := em.markGap > firstMarkGap; grown != (window == 0) {
			t.Fatalf("window %d: mark gap %d, first %d", window, em.markGap, firstMarkGap)
		}
	}
}

// oldestStore is a replay store that only reports its oldest offset.
type oldestStore struct {
	replayStore
	oldest int64
}

func (s oldestStore) Oldest() int64 { return s.oldest }
