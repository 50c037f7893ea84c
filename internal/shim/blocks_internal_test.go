package shim

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"syscall"
	"testing"

	"github.com/tether-ci/tether/protocol"
)

// Block records stay exact when the shim's own pipes hold one page each, as
// the kernel makes them once the user's pipe-buffer limit is reached: every
// splice then fills a pipe, and the staged records go out a page at a time.
func TestBlocksThroughOnePagePipes(t *testing.T) {
	ps, ok := newPipeStore(8 << 20)
	if !ok {
		t.Fatal("cannot make 1 MiB pipes: this test needs the default pipe limits (or root)")
	}
	defer ps.Close()
	for _, store := range []replayStore{newMemoryStore(8 << 20), ps} {
		t.Run(fmt.Sprintf("%T", store), func(t *testing.T) { blocksThroughOnePagePipes(t, store) })
	}
}

func blocksThroughOnePagePipes(t *testing.T, store replayStore) {
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
	em := newEmitter(outW, store, slog.New(slog.DiscardHandler))
	st, err := newStage()
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range []int{st.out.w, st.in.w, st.hdr.w} {
		if _, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), fSetPipeSz, 4096); e != 0 {
			t.Fatalf("shrink a staging pipe: %v", e)
		}
	}
	em.stage = st

	srcR, srcW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer srcR.Close()
	defer srcW.Close()
	growPipe(srcW)
	data := make([]byte, 300<<10)
	rand.Read(data)
	if _, err := srcW.Write(data); err != nil {
		t.Fatal(err)
	}
	src, ok := pipeOf(srcR)
	if !ok {
		t.Fatal("the source is not a pipe")
	}
	em.Hold(protocol.TypeBegin, protocol.Begin{Script: "/s"}) // a held record goes first
	if !em.Blocks(src, len(data)) {
		t.Fatal("Blocks refused a pipe stdout")
	}
	em.Close(protocol.Exit{Reason: protocol.ReasonExitCommand})
	outW.Close()
	got := <-stream

	dec := protocol.NewDecoder(bytes.NewReader(got))
	var out []byte
	var types []protocol.Type
	for {
		rec, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, rec.Type)
		if rec.Type == protocol.TypeBlock {
			out = append(out, rec.Payload...)
		}
	}
	if !bytes.Equal(out, data) {
		t.Fatalf("decoded %d bytes of blocks, want the %d sent", len(out), len(data))
	}
	if types[0] != protocol.TypeBegin || types[len(types)-1] != protocol.TypeExit {
		t.Fatalf("record types %q", types)
	}
	var stored bytes.Buffer
	if err := store.CopyRange(&stored, 0, int64(len(got))); err != nil || !bytes.Equal(stored.Bytes(), got) {
		t.Fatalf("the replay store differs from the stream (%v)", err)
	}
}
