package protocol

import (
	"bytes"
	"io"
	"testing"
)

// chunkReader returns its chunks one per Read.
type chunkReader struct{ chunks [][]byte }

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.chunks[0])
	r.chunks[0] = r.chunks[0][n:]
	if len(r.chunks[0]) == 0 {
		r.chunks = r.chunks[1:]
	}
	return n, nil
}

// A decoder whose buffer grew for a fast stream shrinks it back to the
// small size once the stream slows down, so a connection that goes quiet
// after a burst does not keep the big buffer.
func TestDecoderBufferShrinksWhenTheStreamSlows(t *testing.T) {
	enc := NewEncoder()
	r := &chunkReader{}
	const n = decoderShrinkAfter + 2
	for range n {
		r.chunks = append(r.chunks, enc.AppendOutput(nil, []byte("slow\n")))
	}
	d := NewDecoder(r)
	d.rbuf, d.busy = make([]byte, decoderBigBufSize), true // as after a burst
	for range n {
		if _, err := d.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if len(d.rbuf) != decoderBufSize {
		t.Fatalf("after short reads, the buffer is %d bytes, want %d", len(d.rbuf), decoderBufSize)
	}
}

// A stream whose reads keep filling the buffer keeps the big one.
func TestDecoderBufferStaysBigForAFastStream(t *testing.T) {
	enc := NewEncoder()
	r := &chunkReader{}
	for range 3 {
		r.chunks = append(r.chunks, enc.AppendOutput(nil, bytes.Repeat([]byte("y"), decoderBufSize)))
	}
	d := NewDecoder(r)
	d.rbuf, d.busy = make([]byte, decoderBigBufSize), true
	for {
		if _, err := d.Next(); err != nil {
			break
		}
		if len(d.rbuf) != decoderBigBufSize {
			t.Fatalf("the buffer shrank to %d bytes during a fast stream", len(d.rbuf))
		}
	}
}

// A fast stream whose reads are now and then small keeps the big buffer:
// it is not allocated again for every burst.
func TestDecoderBufferStaysBigThroughAFewSmallReads(t *testing.T) {
	enc := NewEncoder()
	r := &chunkReader{}
	for range 4 {
		r.chunks = append(r.chunks, enc.AppendOutput(nil, bytes.Repeat([]byte("y"), decoderBigBufSize-100)))
		for range decoderShrinkAfter / 2 {
			r.chunks = append(r.chunks, enc.AppendOutput(nil, []byte("small\n")))
		}
	}
	d := NewDecoder(r)
	var big []byte
	for {
		if _, err := d.Next(); err != nil {
			break
		}
		switch {
		case big == nil && len(d.rbuf) == decoderBigBufSize:
			big = d.rbuf
		case big != nil && &d.rbuf[0] != &big[0]:
			t.Fatalf("the buffer was replaced (now %d bytes) during a fast stream with a few small reads", len(d.rbuf))
		}
	}
	if big == nil {
		t.Fatal("the buffer never grew")
	}
}
