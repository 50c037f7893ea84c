package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// genOutput returns random script output of up to about max bytes, mixing
// the shapes the protocol must survive: text lines, long lines without a
// newline, CR progress bars, backslashes, control bytes, valid multi-byte
// UTF-8, invalid and truncated UTF-8, and lines that look like records.
func genOutput(rng *rand.Rand, max int) []byte {
	pieces := []func() []byte{
		func() []byte { return []byte("build step ok\n") },
		func() []byte { return []byte("\n") },
		func() []byte { return []byte("\r") },
		func() []byte { return []byte("\r\n") },
		func() []byte { return []byte(`\`) },
		func() []byte { return []byte(`\x41\r\\`) },
		func() []byte { return []byte("\t\x1b[32mgreen\x1b[0m") },
		func() []byte { return []byte("€😀é✓") },
		func() []byte { return []byte("\xe2\x82") }, // truncated €
		func() []byte { return []byte("\xff\xfe\xc0\xaf\xed\xa0\x80") },
		func() []byte { return []byte(`s 0 {"command_exit_code":0,"script":"x"}` + "\n") },
		func() []byte { return []byte(`j 12 {"exit_code":0}`) },
		func() []byte { return []byte("x - {\"reason\":\"deadline\"}\nr - {}\n") },
		func() []byte { return []byte{byte(rng.IntN(256))} },
		func() []byte { return []byte{byte(rng.IntN(0x20)), 0x7f, 0x80 + byte(rng.IntN(0x80))} },
		func() []byte { // a run of random bytes
			b := make([]byte, rng.IntN(200))
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			return b
		},
		func() []byte { // a long run of one repeated unit, across records
			units := []string{"a", "é", "€", "😀", "\x00", "\\", "\r", "ab\xff"}
			u := units[rng.IntN(len(units))]
			return bytes.Repeat([]byte(u), rng.IntN(3*MaxRecord)/len(u))
		},
	}
	var out []byte
	for len(out) < max {
		out = append(out, pieces[rng.IntN(len(pieces))]()...)
	}
	return out
}

// splitRandom cuts data into random chunks, as pipe reads would.
func splitRandom(rng *rand.Rand, data []byte) [][]byte {
	var chunks [][]byte
	for len(data) > 0 {
		var n int
		switch rng.IntN(4) {
		case 0:
			n = 1 + rng.IntN(4)
		case 1:
			n = 1 + rng.IntN(100)
		case 2:
			n = 1 + rng.IntN(70000)
		default:
			n = len(data)
		}
		n = min(n, len(data))
		chunks = append(chunks, data[:n])
		data = data[n:]
	}
	return chunks
}

// checkStream checks the invariants of an encoded stream that starts at
// offset first: every record is at most MaxRecord bytes, one line, valid
// UTF-8 without control bytes other than TAB and ESC (readable in kubectl
// logs), decodes, and its Seq is the previous Seq+Size. It returns the
// decoded records with their payloads copied.
func checkStream(t testing.TB, stream []byte, first int64) []Record {
	t.Helper()
	next := first
	var recs []Record
	for rest := stream; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			t.Fatalf("stream ends without a newline: %q", rest[:min(len(rest), 80)])
		}
		line := rest[:i+1]
		rest = rest[i+1:]
		if len(line) > MaxRecord {
			t.Fatalf("record of %d bytes at offset %d", len(line), next)
		}
		if !utf8.Valid(line) {
			t.Fatalf("record at offset %d is not valid UTF-8: %q", next, line)
		}
		for _, c := range line[:len(line)-1] {
			if (c < 0x20 && c != '\t' && c != 0x1b) || c == 0x7f {
				t.Fatalf("record at offset %d holds control byte %#x: %q", next, c, line)
			}
		}
		rec, _, err := Parse(line, nil)
		if err != nil {
			t.Fatalf("record at offset %d: %v", next, err)
		}
		if rec.Type == TypeBlock {
			// The header line was checked; the payload is raw bytes and
			// the block's final newline.
			n := rec.Size - len(line)
			if len(rest) < n || rest[n-1] != '\n' {
				t.Fatalf("block at offset %d: %d bytes follow its header, want %d ending in a newline", next, len(rest), n)
			}
			rec.Payload, rest = rest[:n-1], rest[n:]
		}
		if rec.Type.Sequenced() {
			if rec.Seq != next {
				t.Fatalf("record %s has Seq %d, want %d (previous Seq+Size)", rec.Type, rec.Seq, next)
			}
			next = rec.Next()
		}
		rec.Payload = bytes.Clone(rec.Payload)
		recs = append(recs, rec)
	}
	return recs
}

func TestRoundTripProperty(t *testing.T) {
	for seed := range uint64(150) {
		rng := rand.New(rand.NewPCG(seed, 0x7e7e))
		data := genOutput(rng, rng.IntN(1+int(seed%7)*20000))
		chunks := splitRandom(rng, data)

		enc, ref := NewEncoder(), &refEncoder{}
		var stream, refStream []byte
		for _, c := range chunks {
			stream = enc.AppendOutput(stream, c)
			refStream = ref.appendOutput(refStream, c)
		}
		if !bytes.Equal(stream, refStream) {
			t.Fatalf("seed %d: the encoder's output differs from the reference encoder's at byte %d", seed, firstDiff(stream, refStream))
		}
		if enc.Offset() != int64(len(stream)) {
			t.Fatalf("seed %d: Offset() = %d after %d bytes of records", seed, enc.Offset(), len(stream))
		}

		recs := checkStream(t, stream, 0)
		var got []byte
		for i, rec := range recs {
			switch rec.Type {
			case TypeOutput:
				if bytes.IndexByte(rec.Payload, '\n') != len(rec.Payload)-1 {
					t.Fatalf("seed %d: output record %d payload %q does not hold exactly its final newline", seed, i, rec.Payload)
				}
			case TypePartial:
				if bytes.IndexByte(rec.Payload, '\n') >= 0 {
					t.Fatalf("seed %d: partial record %d holds a newline", seed, i)
				}
			default:
				t.Fatalf("seed %d: output made a %s record", seed, rec.Type)
			}
			got = append(got, rec.Payload...)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("seed %d: decoded output differs from the input at byte %d", seed, firstDiff(got, data))
		}

		// The streaming decoder agrees, whatever its reads return.
		dec := NewDecoder(randomReads(rng, stream))
		var got2 []byte
		for {
			rec, err := dec.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("seed %d: decoder: %v", seed, err)
			}
			got2 = append(got2, rec.Payload...)
		}
		if !bytes.Equal(got2, data) {
			t.Fatalf("seed %d: streaming decoder output differs at byte %d", seed, firstDiff(got2, data))
		}
	}
}

// randomReads returns a reader of b whose reads return random amounts.
func randomReads(rng *rand.Rand, b []byte) io.Reader {
	return readerFunc(func(p []byte) (int, error) {
		if len(b) == 0 {
			return 0, io.EOF
		}
		n := min(len(p), len(b), 1+rng.IntN(3*MaxRecord))
		copy(p, b[:n])
		b = b[n:]
		return n, nil
	})
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestValidUTF8SplitsAtCharacters(t *testing.T) {
	// Valid UTF-8 output: every record's payload is valid UTF-8 on its
	// own, so a person reading kubectl logs never sees a broken character.
	chars := []string{"a", "é", "€", "😀", " ", "\t"}
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 1))
		var data []byte
		for len(data) < 5*MaxRecord {
			data = append(data, chars[rng.IntN(len(chars))]...)
			if rng.IntN(20000) == 0 {
				data = append(data, '\n')
			}
		}
		for i, rec := range checkStream(t, encodeAll(data), 0) {
			if !utf8.Valid(rec.Payload) {
				t.Fatalf("seed %d: record %d payload is not valid UTF-8", seed, i)
			}
		}
	}
}

func TestOutputNeverDecodesAsAnotherType(t *testing.T) {
	// Whatever a script prints, including the exact bytes of other
	// records, only output records come out, whatever the offset.
	enc := NewEncoder()
	var stream []byte
	stream, _ = enc.AppendJSON(stream, TypeHello, Hello{Protocol: Version})
	var forged []byte
	other := NewEncoder()
	forged, _ = other.AppendJSON(forged, TypeStatus, Status{Script: "x", CommandExitCode: 0})
	forged, _ = other.AppendJSON(forged, TypeJob, JobDone{ExitCode: 0})
	forged, _ = other.AppendJSON(forged, TypeExit, Exit{Reason: ReasonExitCommand})
	forged, _ = AppendUnsequenced(forged, TypeResumed, Resumed{Nonce: "n"})
	forged = append(forged, []byte("h 0 {}\r\nb 1 {}\x00\n\x18s 2 {}\n")...)
	outputStart := len(stream)
	stream = enc.AppendOutput(stream, forged)
	recs := checkStream(t, stream, 0)
	var out []byte
	for _, rec := range recs[1:] {
		if !rec.Type.IsOutput() {
			t.Fatalf("script output decoded as a %s record", rec.Type)
		}
		out = append(out, rec.Payload...)
	}
	if !bytes.Equal(out, forged) {
		t.Fatalf("output changed: %q", out)
	}
	// Every line the output made begins with "o " or "p ".
	for _, line := range bytes.SplitAfter(stream[outputStart:], []byte("\n")) {
		if len(line) > 0 && !bytes.HasPrefix(line, []byte("o ")) && !bytes.HasPrefix(line, []byte("p ")) {
			t.Fatalf("output line %q", line)
		}
	}
}

func TestOffsetsChainAcrossRecordKinds(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	enc := NewEncoder()
	var stream []byte
	for i := range 400 {
		switch rng.IntN(4) {
		case 0:
			var err error
			stream, err = enc.AppendJSON(stream, TypeStatus, Status{Script: fmt.Sprint("/s/", i), CommandExitCode: rng.IntN(256)})
			if err != nil {
				t.Fatal(err)
			}
		case 1:
			// Unsequenced records may come between sequenced ones.
			var err error
			stream, err = AppendUnsequenced(stream, TypeAlive, Alive{Nonce: fmt.Sprint(i), State: "running"})
			if err != nil {
				t.Fatal(err)
			}
		default:
			stream = enc.AppendOutput(stream, genOutput(rng, rng.IntN(300)))
		}
	}
	recs := checkStream(t, stream, 0)
	var sequenced int64
	for _, rec := range recs {
		if rec.Type.Sequenced() {
			sequenced += int64(rec.Size)
		} else if rec.Seq != Unsequenced {
			t.Fatalf("unsequenced record with Seq %d", rec.Seq)
		}
	}
	if sequenced != enc.Offset() {
		t.Fatalf("sequenced records hold %d bytes, encoder offset is %d", sequenced, enc.Offset())
	}
}

func TestUnescapeMatchesReference(t *testing.T) {
	alphabet := []byte(`\\\\xxrr0fFgZ az` + "\x00\xff\n")
	for seed := range uint64(20000) {
		rng := rand.New(rand.NewPCG(seed, 3))
		src := make([]byte, rng.IntN(40))
		for i := range src {
			src[i] = alphabet[rng.IntN(len(alphabet))]
		}
		want, ok := refUnescape(src)
		got, err := appendUnescaped([]byte("prefix"), src)
		if ok != (err == nil) {
			t.Fatalf("%q: reference ok=%v, appendUnescaped err=%v", src, ok, err)
		}
		if ok && string(got) != "prefix"+string(want) {
			t.Fatalf("%q: got %q, want %q", src, got, want)
		}
	}
}
