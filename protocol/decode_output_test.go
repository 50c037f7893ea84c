package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
)

// decodeLog is what a consumer that tracks the offset it wants sees of a
// stream: the output of the records at exactly that offset, concatenated,
// and everything else (other records, duplicates, gaps, errors) in order.
type decodeLog struct {
	output []byte
	next   int64
	events []string
}

// consume decodes r the way a client session does; fast says whether
// AppendOutput is called before each Next.
func consume(r io.Reader, fast bool) decodeLog {
	d := NewDecoder(r)
	var l decodeLog
	for range 1 << 20 {
		if fast {
			l.output, l.next = d.AppendOutput(l.output, l.next)
		}
		rec, err := d.Next()
		if err != nil {
			l.events = append(l.events, "error: "+err.Error())
			if err == io.EOF || err == ErrTruncated || !errors.Is(err, ErrMalformed) {
				return l
			}
			continue
		}
		if rec.Type.IsOutput() && rec.Seq == l.next {
			l.output = append(l.output, rec.Payload...)
			l.next = rec.Next()
			continue
		}
		l.events = append(l.events, fmt.Sprintf("%s %d %q at %d", rec.Type, rec.Seq, rec.Payload, l.next))
		if rec.Type.Sequenced() && rec.Seq == l.next {
			l.next = rec.Next()
		}
	}
	panic("decoder made no progress")
}

// checkFastPath fails when decoding stream with and without AppendOutput
// differs in any way.
func checkFastPath(t *testing.T, stream []byte, seed uint64) {
	t.Helper()
	slow := consume(randomReads(rand.New(rand.NewPCG(seed, 1)), stream), false)
	fast := consume(randomReads(rand.New(rand.NewPCG(seed, 1)), stream), true)
	if !bytes.Equal(slow.output, fast.output) || slow.next != fast.next {
		i := firstDiff(slow.output, fast.output)
		t.Fatalf("output differs at byte %d (next %d vs %d)\nslow: %q\nfast: %q", i, slow.next, fast.next,
			clip(slow.output[min(i, len(slow.output)):]), clip(fast.output[min(i, len(fast.output)):]))
	}
	if fmt.Sprint(slow.events) != fmt.Sprint(fast.events) {
		t.Fatalf("events differ\nslow: %q\nfast: %q", slow.events, fast.events)
	}
}

// mangle damages a valid stream the ways a reconnect or a bug would: a
// replayed range (duplicates), a dropped range (a gap), flipped bytes,
// leading zeros, a cut tail.
func mangle(rng *rand.Rand, s []byte) []byte {
	s = bytes.Clone(s)
	for range rng.IntN(4) {
		if len(s) < 2 {
			break
		}
		a := rng.IntN(len(s))
		b := a + rng.IntN(len(s)-a)
		switch rng.IntN(5) {
		case 0:
			s = append(s[:b:b], append(bytes.Clone(s[a:b]), s[b:]...)...)
		case 1:
			s = append(s[:a:a], s[b:]...)
		case 2:
			s[a] = byte(rng.Uint32())
		case 3:
			if i := bytes.Index(s[a:], []byte{"od"[rng.IntN(2)], ' '}); i >= 0 {
				at := a + i + 2
				s = append(s[:at:at], append([]byte("0"), s[at:]...)...)
			}
		case 4:
			s = s[:b]
		}
	}
	return s
}

// TestAppendOutputMatchesNext checks the fast path against the general one
// on valid and damaged streams, read in random amounts.
func TestAppendOutputMatchesNext(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for round := range 300 {
		enc := NewEncoder()
		var stream []byte
		for range 1 + rng.IntN(6) {
			stream = enc.AppendOutput(stream, genOutput(rng, rng.IntN(4*MaxRecord)))
			if rng.IntN(2) == 0 {
				stream = enc.AppendBlocks(stream, genOutput(rng, rng.IntN(3*MaxRecord)))
			}
			if rng.IntN(2) == 0 {
				stream, _ = enc.AppendJSON(stream, TypeStatus, Status{Script: "/s", CommandExitCode: rng.IntN(3)})
			}
			if rng.IntN(3) == 0 {
				stream, _ = AppendUnsequenced(stream, TypeAlive, Alive{Nonce: "n"})
			}
		}
		if round%3 != 0 {
			stream = mangle(rng, stream)
		}
		checkFastPath(t, stream, uint64(round))
	}
}

func FuzzAppendOutput(f *testing.F) {
	for _, s := range recordSeeds() {
		f.Add([]byte(s), uint64(0))
	}
	f.Add([]byte("o 0 a\no 6 b\no 6 b\np 12 c\no 17 d\\\\\n"), uint64(3))
	f.Fuzz(func(t *testing.T, stream []byte, seed uint64) {
		checkFastPath(t, stream, seed)
	})
}
