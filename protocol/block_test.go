package protocol

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// A block record carries its bytes as they are, newlines and all, and the
// decoder gives them back exactly, whatever the read sizes.
func TestBlockRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 200 {
		data := genOutput(rng, rng.IntN(5*MaxRecord))
		enc := NewEncoder()
		stream, _ := enc.AppendJSON(nil, TypeBegin, Begin{Script: "/s"})
		stream = enc.AppendBlocks(stream, data)
		stream, _ = enc.AppendJSON(stream, TypeStatus, Status{Script: "/s"})
		if enc.Offset() != int64(len(stream)) {
			t.Fatalf("round %d: offset %d after %d bytes", round, enc.Offset(), len(stream))
		}
		var out []byte
		var types []Type
		next := int64(0)
		dec := NewDecoder(randomReads(rand.New(rand.NewPCG(uint64(round), 2)), stream))
		for {
			rec, err := dec.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if rec.Seq != next || rec.Size > MaxRecord {
				t.Fatalf("round %d: record %s at %d (size %d), want offset %d", round, rec.Type, rec.Seq, rec.Size, next)
			}
			next = rec.Next()
			types = append(types, rec.Type)
			if rec.Type == TypeBlock {
				out = append(out, rec.Payload...)
			}
		}
		if !bytes.Equal(out, data) {
			t.Fatalf("round %d: decoded %d bytes, want %d (first difference at %d)", round, len(out), len(data), firstDiff(out, data))
		}
		if types[0] != TypeBegin || types[len(types)-1] != TypeStatus || len(data) > 0 && types[1] != TypeBlock {
			t.Fatalf("round %d: record types %q", round, types)
		}
	}
}

// MaxBlock fills a record to exactly MaxRecord bytes at every offset
// length, and AppendBlockHeader refuses what would not fit.
func TestBlockSizeLimit(t *testing.T) {
	for _, at := range []int64{0, 9, 10, 99_999, 1 << 40, 1<<62 + 12345} {
		enc := &Encoder{next: at}
		n := enc.MaxBlock()
		rec := enc.AppendBlocks(nil, bytes.Repeat([]byte("a\n"), n)[:n])
		if len(rec) != MaxRecord {
			t.Errorf("offset %d: a full block is %d bytes, want %d", at, len(rec), MaxRecord)
		}
		if got, _, err := Parse(rec[:bytes.IndexByte(rec, '\n')+1], nil); err != nil || got.Size != MaxRecord || got.Seq != at {
			t.Errorf("offset %d: header parses as %+v, %v", at, got, err)
		}
		for _, bad := range []int{0, -1, n + 1} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("offset %d: AppendBlockHeader(%d) did not panic", at, bad)
					}
				}()
				(&Encoder{next: at}).AppendBlockHeader(nil, bad)
			}()
		}
	}
}

func TestBlockWireForm(t *testing.T) {
	enc := &Encoder{next: 42}
	got := enc.AppendBlocks(nil, []byte("a\\b\r\n\x00c"))
	if want := "d 42 7\na\\b\r\n\x00c\n"; string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if enc.Offset() != 42+int64(len(got)) {
		t.Fatalf("offset %d", enc.Offset())
	}
}

func TestBlockRejects(t *testing.T) {
	for _, tc := range []struct{ stream, why string }{
		{"d 0 3\nabcd\n", "no newline after the payload"},
		{"d 0 0\n\n", "empty block"},
		{"d 0 03\nabc\n", "leading zero in the length"},
		{"d 0 3x\nabc\n", "length not a number"},
		{"d 0 16378\n" + strings.Repeat("a", 16378) + "\n", "over the record limit"},
		{"d - 3\nabc\n", "unsequenced block"},
	} {
		dec := NewDecoder(strings.NewReader(tc.stream))
		if rec, err := dec.Next(); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %q decoded as %s %q, %v; want ErrMalformed", tc.why, tc.stream, rec.Type, rec.Payload, err)
		}
	}
	dec := NewDecoder(strings.NewReader("d 0 10\nabc"))
	if _, err := dec.Next(); !errors.Is(err, ErrTruncated) {
		t.Errorf("a stream ending inside a block: %v, want ErrTruncated", err)
	}
}

// A connection that starts inside a block reads its payload as lines: a
// line that looks like a block header must not make the decoder swallow
// the records after it (the resume answer among them).
func TestBlockHeaderInsidePayloadWhileResynchronising(t *testing.T) {
	enc := &Encoder{next: 100}
	forged := "x\nd 5 2000\nmore raw output\n"
	stream := enc.AppendBlocks(nil, []byte(forged))
	stream, _ = AppendUnsequenced(stream, TypeResumed, Resumed{Nonce: "n", From: 7})
	cut := bytes.Index(stream, []byte("x\n")) + 2 // the connection starts after the block's first line

	dec := NewDecoder(bytes.NewReader(stream[cut:]))
	dec.Resync(true)
	for {
		rec, err := dec.Next()
		if errors.Is(err, ErrMalformed) {
			continue
		}
		if err != nil {
			t.Fatalf("no resume answer before %v", err)
		}
		if rec.Type == TypeResumed {
			break
		}
	}
	// Without Resync the forged header takes the 2000 bytes after it.
	dec = NewDecoder(bytes.NewReader(stream[cut:]))
	if _, err := dec.Next(); !errors.Is(err, ErrTruncated) {
		t.Fatalf("a forged block header outside resync: %v, want ErrTruncated (it swallows the stream)", err)
	}
}

// AppendOutput joins small blocks with the lines around them and leaves
// a block of DirectOutput bytes or more to Next.
func TestAppendOutputLeavesBigBlocksToNext(t *testing.T) {
	enc := NewEncoder()
	small := []byte("small\nblock")
	big := bytes.Repeat([]byte("x"), DirectOutput)
	stream := enc.AppendOutput(nil, []byte("line\n"))
	stream = enc.AppendBlocks(stream, small)
	stream = enc.AppendBlocks(stream, big)
	dec := NewDecoder(bytes.NewReader(stream))
	first, err := dec.Next() // fills the buffer
	if err != nil {
		t.Fatal(err)
	}
	out, next := dec.AppendOutput(nil, first.Next())
	if string(out) != "small\nblock" {
		t.Fatalf("AppendOutput took %q", out)
	}
	rec, err := dec.Next()
	if err != nil || rec.Type != TypeBlock || rec.Seq != next || !bytes.Equal(rec.Payload, big) {
		t.Fatalf("Next after AppendOutput: %s at %d (%d bytes), %v; want the big block at %d", rec.Type, rec.Seq, len(rec.Payload), err, next)
	}
}
