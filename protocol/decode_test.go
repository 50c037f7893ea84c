package protocol

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestParseValid(t *testing.T) {
	for _, tc := range []struct {
		line    string
		typ     Type
		seq     int64
		payload string
	}{
		{"o 0 hello\n", TypeOutput, 0, "hello\n"},
		{"o 0 \n", TypeOutput, 0, "\n"},
		{"p 17 partial\n", TypePartial, 17, "partial"},
		{"p 5 \n", TypePartial, 5, ""},
		{`o 3 a\\b\rc\x00\xff` + "\n", TypeOutput, 3, "a\\b\rc\x00\xff\n"},
		{`p 3 \\` + "\n", TypePartial, 3, "\\"},
		// The decoder accepts forms the encoder never writes: upper-case
		// hex, escaped printable bytes, raw bytes it would have escaped.
		{`o 0 \x41\xFF\x5c` + "\n", TypeOutput, 0, "A\xff\\\n"},
		{"o 0 raw\x00\xff\x7f\n", TypeOutput, 0, "raw\x00\xff\x7f\n"},
		{"o 0 two  spaces \n", TypeOutput, 0, "two  spaces \n"},
		{`h 0 {"protocol":1}` + "\n", TypeHello, 0, `{"protocol":1}`},
		{`b 100 {"script":"/x"}` + "\n", TypeBegin, 100, `{"script":"/x"}`},
		{`s 9223372036854775807 {}` + "\n", TypeStatus, 9223372036854775807, `{}`},
		{`j 7 {"exit_code":1}` + "\n", TypeJob, 7, `{"exit_code":1}`},
		{`e 7 {"error":"x"}` + "\n", TypeError, 7, `{"error":"x"}`},
		{`x 7 {"reason":"deadline"}` + "\n", TypeExit, 7, `{"reason":"deadline"}`},
		{`r - {"nonce":"n"}` + "\n", TypeResumed, Unsequenced, `{"nonce":"n"}`},
		{`a - {}` + "\n", TypeAlive, Unsequenced, `{}`},
		// The payload is not validated as JSON beyond its braces.
		{`s 1 {not json}` + "\n", TypeStatus, 1, `{not json}`},
	} {
		rec, _, err := Parse([]byte(tc.line), nil)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.line, err)
			continue
		}
		if rec.Type != tc.typ || rec.Seq != tc.seq || string(rec.Payload) != tc.payload || rec.Size != len(tc.line) {
			t.Errorf("Parse(%q) = %s %d %q size %d; want %s %d %q size %d", tc.line,
				rec.Type, rec.Seq, rec.Payload, rec.Size, tc.typ, tc.seq, tc.payload, len(tc.line))
		}
	}
}

func TestParseRejects(t *testing.T) {
	long := "o 0 " + strings.Repeat("x", MaxRecord-4) + "\n" // MaxRecord+1 bytes
	for _, tc := range []struct {
		name    string
		line    string
		unknown bool // wraps ErrUnknownType too
	}{
		{"empty", "", false},
		{"no newline", "o 0 x", false},
		{"newline only", "\n", false},
		{"too short", "o 0\n", false},
		{"no space after type", "o0 x\n", false},
		{"type is two bytes", "oo 0 x\n", false},
		{"unknown type", `z 0 {}` + "\n", true},
		{"upper-case type", "S 0 {}\n", true},
		{"NUL type", "\x00 0 x\n", true},
		{"unknown unsequenced type", "q - x\n", true},
		{"missing sequence", "o  x\n", false},
		{"sequence without payload separator", "o 12\n", false},
		{"sequence then newline only", "o 1\n\n", false},
		{"leading zero", "o 01 x\n", false},
		{"double zero", "o 00 x\n", false},
		{"negative sequence", "o -1 x\n", false},
		{"plus sign", "o +1 x\n", false},
		{"hex sequence", "o 0x10 x\n", false},
		{"sequence with a letter", "o 1a x\n", false},
		{"tab separator", "o 1\tx\n", false},
		{"sequence overflows int64", "o 9223372036854775808 x\n", false},
		{"sequence far too long", "o 123456789012345678901234567890 x\n", false},
		{"dash on a sequenced type", `s - {}` + "\n", false},
		{"dash on output", "o - x\n", false},
		{"number on an unsequenced type", `r 0 {}` + "\n", false},
		{"number on alive", `a 12 {}` + "\n", false},
		{"dash without separator", "r -{}\n", false},
		{"double dash", "r -- {}\n", false},
		{"JSON array", `s 0 []` + "\n", false},
		{"JSON string", `h 0 "v1"` + "\n", false},
		{"JSON number", `j 0 0` + "\n", false},
		{"empty JSON payload", "s 0 \n", false},
		{"lone brace", "s 0 {\n", false},
		{"unclosed object", `s 0 {"a":1` + "\n", false},
		{"space before object", `s 0  {}` + "\n", false},
		{"trailing space after object", `s 0 {} ` + "\n", false},
		{"unsequenced payload not an object", "a - []\n", false},
		{"unknown escape", `o 0 \q` + "\n", false},
		{"escaped newline", `o 0 \n` + "\n", false},
		{"unicode escape", `o 0 \u0041` + "\n", false},
		{"trailing backslash", `o 0 abc\` + "\n", false},
		{"short hex escape", `o 0 \x4` + "\n", false},
		{"hex escape at end", `p 0 \x` + "\n", false},
		{"bad hex digit", `o 0 \xzz` + "\n", false},
		{"bad second hex digit", `o 0 \x4g` + "\n", false},
		{"longer than MaxRecord", long, false},
		{"two lines", "o 0 a\no 6 b\n", false},
		{"newline inside a JSON record", "s 0 {\n}\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, _, err := Parse([]byte(tc.line), nil)
			if err == nil {
				t.Fatalf("Parse(%q) accepted it: %+v", tc.line, rec)
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse(%q) error %v does not wrap ErrMalformed", tc.line, err)
			}
			if got := errors.Is(err, ErrUnknownType); got != tc.unknown {
				t.Fatalf("Parse(%q) error %v: errors.Is(ErrUnknownType) = %v, want %v", tc.line, err, got, tc.unknown)
			}
		})
	}
}

func TestParseUnknownTypeErrorIsClear(t *testing.T) {
	_, _, err := Parse([]byte("z 0 {}\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "unknown record type") || !strings.Contains(err.Error(), "z") {
		t.Fatalf("error %q should name the unknown type", err)
	}
}

func TestParseSizeLimit(t *testing.T) {
	exact := "p 0 " + strings.Repeat("x", MaxRecord-5) + "\n"
	if len(exact) != MaxRecord {
		t.Fatal("test bug")
	}
	rec, _, err := Parse([]byte(exact), nil)
	if err != nil || rec.Size != MaxRecord || len(rec.Payload) != MaxRecord-5 {
		t.Fatalf("a record of exactly MaxRecord bytes: %v", err)
	}
}

func TestParseReusesBuffer(t *testing.T) {
	buf := make([]byte, 0, 64)
	rec, buf2, err := Parse([]byte(`o 0 a\\b`+"\n"), buf)
	if err != nil {
		t.Fatal(err)
	}
	if &buf2[:1][0] != &buf[:1][0] {
		t.Error("Parse did not reuse the buffer for an escaped payload")
	}
	if string(rec.Payload) != "a\\b\n" {
		t.Errorf("payload %q", rec.Payload)
	}
	// A payload without escapes aliases the line: no copy at all.
	line := []byte("o 0 plain\n")
	rec, _, err = Parse(line, buf2)
	if err != nil || &rec.Payload[0] != &line[4] {
		t.Errorf("plain payload is not an alias of the line (%v)", err)
	}
}

// reads is a reader that returns its chunks one per Read and then err.
type reads struct {
	chunks []string
	err    error
}

func (r *reads) Read(p []byte) (int, error) {
	if len(r.chunks) == 0 {
		return 0, r.err
	}
	n := copy(p, r.chunks[0])
	r.chunks[0] = r.chunks[0][n:]
	if r.chunks[0] == "" {
		r.chunks = r.chunks[1:]
	}
	return n, nil
}

// step is one expected result of Decoder.Next.
type step struct {
	typ     Type
	payload string
	err     error // checked with errors.Is; nil means a record
}

func expectSteps(t *testing.T, dec *Decoder, steps []step) {
	t.Helper()
	for i, want := range steps {
		rec, err := dec.Next()
		if want.err != nil {
			if !errors.Is(err, want.err) {
				t.Fatalf("step %d: got record %s %q, error %v; want error %v", i, rec.Type, rec.Payload, err, want.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("step %d: %v; want record %s %q", i, err, want.typ, want.payload)
		}
		if rec.Type != want.typ || string(rec.Payload) != want.payload {
			t.Fatalf("step %d: got %s %q, want %s %q", i, rec.Type, rec.Payload, want.typ, want.payload)
		}
	}
}

func TestDecoderRecoversFromMalformedLines(t *testing.T) {
	stream := "o 0 one\n" +
		"garbage\n" +
		"z 10 {}\n" +
		"o 01 leading zero\n" +
		`o 30 bad \q escape` + "\n" +
		"\n" +
		"p 50 two\n" +
		"o 59 " + strings.Repeat("y", MaxRecord) + "\n" + // over MaxRecord, under the buffer
		"o 60 " + strings.Repeat("z", 5*MaxRecord) + "\n" + // over the buffer: skipped
		"o 70 three\n"
	steps := []step{
		{typ: TypeOutput, payload: "one\n"},
		{err: ErrMalformed},
		{err: ErrUnknownType},
		{err: ErrMalformed},
		{err: ErrMalformed},
		{err: ErrMalformed},
		{typ: TypePartial, payload: "two"},
		{err: ErrMalformed},
		{err: ErrMalformed},
		{typ: TypeOutput, payload: "three\n"},
		{err: io.EOF},
		{err: io.EOF},
	}
	t.Run("whole", func(t *testing.T) {
		expectSteps(t, NewDecoder(strings.NewReader(stream)), steps)
	})
	t.Run("one byte per read", func(t *testing.T) {
		expectSteps(t, NewDecoder(iotest.OneByteReader(strings.NewReader(stream))), steps)
	})
	t.Run("EOF with the last data", func(t *testing.T) {
		expectSteps(t, NewDecoder(iotest.DataErrReader(strings.NewReader(stream))), steps)
	})
	t.Run("half reads", func(t *testing.T) {
		expectSteps(t, NewDecoder(iotest.HalfReader(strings.NewReader(stream))), steps)
	})
}

func TestDecoderEnds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream string
		steps  []step
	}{
		{"empty", "", []step{{err: io.EOF}}},
		{"clean end", "o 0 a\n", []step{{typ: TypeOutput, payload: "a\n"}, {err: io.EOF}}},
		{"torn last record", "o 0 a\np 6 b", []step{{typ: TypeOutput, payload: "a\n"}, {err: ErrTruncated}, {err: io.EOF}}},
		{"torn header", "o 0 a\no", []step{{typ: TypeOutput, payload: "a\n"}, {err: ErrTruncated}, {err: io.EOF}}},
		{"torn over-long line", strings.Repeat("x", 5*MaxRecord), []step{{err: ErrMalformed}, {err: ErrTruncated}, {err: io.EOF}}},
		{"over-long line that ends at EOF", strings.Repeat("x", 4*MaxRecord) + "\n", []step{{err: ErrMalformed}, {err: io.EOF}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectSteps(t, NewDecoder(strings.NewReader(tc.stream)), tc.steps)
			expectSteps(t, NewDecoder(iotest.OneByteReader(strings.NewReader(tc.stream))), tc.steps)
		})
	}
}

func TestDecoderReadError(t *testing.T) {
	boom := errors.New("connection reset")
	r := &reads{chunks: []string{"o 0 a\np 6 ", "b\no 12 c"}, err: boom}
	dec := NewDecoder(r)
	expectSteps(t, dec, []step{
		{typ: TypeOutput, payload: "a\n"},
		{typ: TypePartial, payload: "b"},
		{err: boom},
	})
}

func TestDecoderRejectsBrokenReader(t *testing.T) {
	dec := NewDecoder(readerFunc(func(p []byte) (int, error) { return len(p) + 1, nil }))
	if _, err := dec.Next(); err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("a reader returning too large a count: %v", err)
	}
	dec = NewDecoder(readerFunc(func(p []byte) (int, error) { return 0, nil }))
	if _, err := dec.Next(); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("a reader that never makes progress: %v", err)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func TestDecoderStartsMidRecord(t *testing.T) {
	// An attach stream can begin inside a record: the tail of that record
	// is one malformed (or, by chance, well-formed) line, after which the
	// stream is in step again.
	enc := NewEncoder()
	stream := enc.AppendOutput(nil, []byte("first line of output\nsecond\n"))
	statusAt := len(stream)
	stream, _ = enc.AppendJSON(stream, TypeStatus, Status{Script: "/a"})
	for cut := 1; cut <= statusAt; cut++ {
		dec := NewDecoder(bytes.NewReader(stream[cut:]))
		var sawStatus bool
		for {
			rec, err := dec.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil && !errors.Is(err, ErrMalformed) {
				t.Fatalf("cut at %d: %v", cut, err)
			}
			if err == nil && rec.Type == TypeStatus {
				sawStatus = true
			}
		}
		if !sawStatus {
			t.Fatalf("cut at %d: the status record after the cut was lost", cut)
		}
	}
}

func TestDecoderPayloadUnescapedAcrossRecords(t *testing.T) {
	// The unescape buffer is reused; a payload must be read before Next.
	stream := `o 0 a\\` + "\n" + `o 8 \rb` + "\n"
	dec := NewDecoder(strings.NewReader(stream))
	r1, err := dec.Next()
	if err != nil {
		t.Fatal(err)
	}
	first := string(r1.Payload)
	r2, err := dec.Next()
	if err != nil {
		t.Fatal(err)
	}
	if first != "a\\\n" || string(r2.Payload) != "\rb\n" || r2.Seq != 8 {
		t.Fatalf("payloads %q, %q (seq %d)", first, r2.Payload, r2.Seq)
	}
}
