package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

// encodeAll encodes data with a fresh encoder in one call.
func encodeAll(data []byte) []byte {
	return NewEncoder().AppendOutput(nil, data)
}

func TestAppendOutputExact(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want string
	}{
		{"line", "hello\n", "o 0 hello\n"},
		{"partial", "hello", "p 0 hello\n"},
		{"line then partial", "a\nb", "o 0 a\np 6 b\n"},
		{"empty line", "\n", "o 0 \n"},
		{"empty lines", "\n\n", "o 0 \no 5 \n"},
		{"offsets count bytes", "first line\nsecond\n", "o 0 first line\no 15 second\n"},
		{"tab and colours copied", "a\tb \x1b[31mred\x1b[0m\n", "o 0 a\tb \x1b[31mred\x1b[0m\n"},
		{"backslash", `C:\dir\n` + "\n", `o 0 C:\\dir\\n` + "\n"},
		{"carriage return", "crlf\r\n", `o 0 crlf\r` + "\n"},
		{"progress bar", "10%\r20%\r", `p 0 10%\r20%\r` + "\n"},
		{"control bytes", "\x00\x01\x07\x08\x0b\x0c\x1f\x7f\n", `o 0 \x00\x01\x07\x08\x0b\x0c\x1f\x7f` + "\n"},
		{"valid UTF-8 copied", "héllo ✓ 😀 \uFFFD\n", "o 0 héllo ✓ 😀 \uFFFD\n"},
		{"invalid bytes", "\xff\xfe\x80\n", `o 0 \xff\xfe\x80` + "\n"},
		{"truncated character", "\xc3", `p 0 \xc3` + "\n"},
		{"truncated character then ASCII", "\xe2\x9c.\n", `o 0 \xe2\x9c.` + "\n"},
		{"overlong encoding", "\xc0\xaf\n", `o 0 \xc0\xaf` + "\n"},
		{"surrogate", "\xed\xa0\x80\n", `o 0 \xed\xa0\x80` + "\n"},
		{"beyond U+10FFFF", "\xf4\x90\x80\x80\n", `o 0 \xf4\x90\x80\x80` + "\n"},
		{"C1 control copied as UTF-8", "\u0085\n", "o 0 \u0085\n"},
		// Script output that looks like records stays output.
		{"forged status", `s 0 {"command_exit_code":0,"script":"x"}` + "\n",
			`o 0 s 0 {"command_exit_code":0,"script":"x"}` + "\n"},
		{"forged job at line start", "x\nj 12 {\"exit_code\":0}\n",
			"o 0 x\no 6 j 12 {\"exit_code\":0}\n"},
		{"forged exit after CR", "\rx - {\"reason\":\"exit-command\"}\n",
			`o 0 \rx - {"reason":"exit-command"}` + "\n"},
		{"forged record with embedded newline escape", "a\\nr - {}\n",
			`o 0 a\\nr - {}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := encodeAll([]byte(tc.in))
			if string(got) != tc.want {
				t.Fatalf("AppendOutput(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			// And back.
			if dec := decodeOutput(t, got); string(dec) != tc.in {
				t.Fatalf("decoded %q, want %q", dec, tc.in)
			}
		})
	}
}

// decodeOutput decodes a stream that must hold only output records and
// returns the concatenated payloads.
func decodeOutput(t testing.TB, stream []byte) []byte {
	t.Helper()
	var out []byte
	for _, rec := range decodeAll(t, stream) {
		if !rec.Type.IsOutput() {
			t.Fatalf("record of type %s in an output stream", rec.Type)
		}
		out = append(out, rec.Payload...)
	}
	return out
}

// decodeAll decodes a stream that must be valid and returns the records
// with their payloads copied.
func decodeAll(t testing.TB, stream []byte) []Record {
	t.Helper()
	var recs []Record
	dec := NewDecoder(bytes.NewReader(stream))
	for {
		rec, err := dec.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return recs
			}
			t.Fatalf("record %d: %v", len(recs), err)
		}
		rec.Payload = bytes.Clone(rec.Payload)
		recs = append(recs, rec)
	}
}

func TestAppendOutputAppendsAndContinuesOffsets(t *testing.T) {
	enc := NewEncoder()
	dst := []byte("keep")
	dst = enc.AppendOutput(dst, []byte("ab"))
	if enc.Offset() != int64(len("p 0 ab\n")) {
		t.Fatalf("Offset() = %d after one record", enc.Offset())
	}
	dst = enc.AppendOutput(dst, []byte("c\n"))
	dst = enc.AppendOutput(dst, nil) // nothing to write
	want := "keepp 0 ab\no 7 c\n"
	if string(dst) != want {
		t.Fatalf("got %q, want %q", dst, want)
	}
	if enc.Offset() != int64(len(want)-len("keep")) {
		t.Fatalf("Offset() = %d, want %d", enc.Offset(), len(want)-len("keep"))
	}
}

func TestAppendOutputLongLine(t *testing.T) {
	const n = 100 * 1024
	line := append(bytes.Repeat([]byte("a"), n), '\n')
	stream := encodeAll(line)
	recs := decodeAll(t, stream)
	// Every record but the last is a full partial record; the record
	// holds MaxRecord bytes exactly, header included.
	var total int
	for i, rec := range recs {
		last := i == len(recs)-1
		wantType := TypePartial
		if last {
			wantType = TypeOutput
		}
		if rec.Type != wantType {
			t.Fatalf("record %d has type %s, want %s", i, rec.Type, wantType)
		}
		if !last && rec.Size != MaxRecord {
			t.Fatalf("record %d is %d bytes, want a full %d-byte record", i, rec.Size, MaxRecord)
		}
		total += len(rec.Payload)
	}
	if total != len(line) {
		t.Fatalf("payloads hold %d bytes, want %d", total, len(line))
	}
	if want := n/(MaxRecord-10) + 1; len(recs) < want {
		t.Fatalf("%d records, want at least %d", len(recs), want)
	}
}

func TestAppendOutputLineFillingOneRecordExactly(t *testing.T) {
	// "o 0 " + payload + "\n" == MaxRecord: one record; one byte more: two.
	fits := bytes.Repeat([]byte("x"), MaxRecord-5)
	got := encodeAll(append(bytes.Clone(fits), '\n'))
	if len(got) != MaxRecord || got[0] != 'o' {
		t.Fatalf("a line that fills one record exactly became %d bytes starting %q", len(got), got[:4])
	}
	got = encodeAll(append(append(bytes.Clone(fits), 'y'), '\n'))
	recs := decodeAll(t, got)
	if len(recs) != 2 || recs[0].Type != TypePartial || recs[0].Size != MaxRecord || string(recs[1].Payload) != "y\n" {
		t.Fatalf("one byte too many: got %d records, first %s of %d bytes", len(recs), recs[0].Type, recs[0].Size)
	}
	// Partial data that fills a record exactly stays one partial record.
	got = encodeAll(fits)
	if len(got) != MaxRecord || got[0] != 'p' {
		t.Fatalf("partial data filling a record became %d bytes starting %q", len(got), got[:4])
	}
}

func TestAppendOutputSplitsAtCharacterBoundaries(t *testing.T) {
	for _, unit := range []string{"€", "😀", "é", "a€", "ab😀", "\x00", "\\", "\r", "a\xff"} {
		t.Run(fmt.Sprintf("%q", unit), func(t *testing.T) {
			line := strings.Repeat(unit, 3*MaxRecord/len(unit)) + "\n"
			stream := encodeAll([]byte(line))
			recs := decodeAll(t, stream)
			if len(recs) < 2 {
				t.Fatalf("a %d-byte line made %d records", len(line), len(recs))
			}
			var got []byte
			for i, rec := range recs {
				if rec.Size > MaxRecord {
					t.Fatalf("record %d is %d bytes", i, rec.Size)
				}
				// No record may end in the middle of a character or an
				// escape, so each payload decodes on its own to whole units.
				if utf8.ValidString(unit) && !utf8.Valid(rec.Payload) {
					t.Fatalf("record %d splits a character: payload ends %q", i, rec.Payload[max(0, len(rec.Payload)-4):])
				}
				// A full record leaves less room than the next unit needs.
				if i < len(recs)-1 && rec.Size < MaxRecord-4 {
					t.Fatalf("record %d is only %d bytes but the line continues", i, rec.Size)
				}
				got = append(got, rec.Payload...)
			}
			if string(got) != line {
				t.Fatal("payloads do not add up to the line")
			}
		})
	}
}

func TestAppendHeader(t *testing.T) {
	for _, seq := range []int64{0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 4096, 16384, 12345678,
		999999999, 1000000000, 999999999999999999, 1000000000000000000, math.MaxInt64} {
		got := string(appendHeader([]byte("x"), TypeOutput, seq))
		if want := fmt.Sprintf("xo %d ", seq); got != want {
			t.Errorf("appendHeader(%d) = %q, want %q", seq, got, want)
		}
	}
	if got := string(appendHeader(nil, TypeAlive, Unsequenced)); got != "a - " {
		t.Errorf("unsequenced header = %q", got)
	}
	for u := uint64(1); u < math.MaxInt64/3; u = u*3 + 1 {
		if got, want := decimalLen(u), len(fmt.Sprint(u)); got != want {
			t.Errorf("decimalLen(%d) = %d, want %d", u, got, want)
		}
	}
	if decimalLen(0) != 1 || decimalLen(math.MaxUint64) != 20 {
		t.Errorf("decimalLen(0) = %d, decimalLen(MaxUint64) = %d", decimalLen(0), decimalLen(math.MaxUint64))
	}
}

func TestAppendJSON(t *testing.T) {
	enc := NewEncoder()
	dst, err := enc.AppendJSON(nil, TypeHello, Hello{Protocol: Version, Shim: "v1.2.3", MaxRecord: MaxRecord, PID: 1, Shell: "/bin/sh", Replay: "memory", ReplayBytes: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	want := `h 0 {"protocol":3,"shim":"v1.2.3","max_record":16384,"pid":1,"shell":"/bin/sh","tty":false,"replay":"memory","replay_bytes":4194304}` + "\n"
	if string(dst) != want {
		t.Fatalf("hello record\n got %s\nwant %s", dst, want)
	}
	if enc.Offset() != int64(len(want)) {
		t.Fatalf("Offset() = %d, want %d", enc.Offset(), len(want))
	}
	dst = enc.AppendOutput(dst, []byte("x\n"))
	dst, err = enc.AppendJSON(dst, TypeStatus, Status{Script: "/s/a b.sh", CommandExitCode: 137, Signal: "SIGKILL", DurationMS: 12, Phase: "script"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus := fmt.Sprintf(`s %d {"script":"/s/a b.sh","command_exit_code":137,"signal":"SIGKILL","duration_ms":12,"error":"","phase":"script"}`+"\n", len(want)+len("o 142 x\n"))
	if !strings.HasSuffix(string(dst), wantStatus) {
		t.Fatalf("status record: got %q, want suffix %q", dst, wantStatus)
	}
	// A JSON string with a newline, < and U+2028 stays on one line.
	dst, err = enc.AppendJSON(nil, TypeError, ErrorRecord{Error: "bad\nline <tag> \u2028", Input: "\x18x"})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(dst, []byte("\n")) != 1 || dst[len(dst)-1] != '\n' {
		t.Fatalf("JSON record is not one line: %q", dst)
	}
	rec, _, err := Parse(dst, nil)
	if err != nil {
		t.Fatal(err)
	}
	var er ErrorRecord
	if err := json.Unmarshal(rec.Payload, &er); err != nil || er.Error != "bad\nline <tag> \u2028" || er.Input != "\x18x" {
		t.Fatalf("error record payload %s decoded to %+v, %v", rec.Payload, er, err)
	}
}

func TestAppendJSONRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    Type
		v    any
	}{
		{"output type", TypeOutput, Status{}},
		{"partial type", TypePartial, Status{}},
		{"unsequenced type", TypeResumed, Resumed{}},
		{"unencodable value", TypeStatus, map[string]any{"f": func() {}}},
		{"NaN", TypeStatus, math.NaN()},
		{"too large", TypeError, ErrorRecord{Error: strings.Repeat("e", MaxRecord)}},
		{"too large after escaping", TypeError, ErrorRecord{Error: strings.Repeat("<", MaxRecord/4)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc := NewEncoder()
			enc.AppendOutput(nil, []byte("before\n"))
			off := enc.Offset()
			dst := []byte("keep")
			got, err := enc.AppendJSON(dst, tc.t, tc.v)
			if err == nil {
				t.Fatalf("AppendJSON accepted it: %q", got)
			}
			if string(got) != "keep" || enc.Offset() != off {
				t.Fatalf("after the error dst = %q and offset %d, want them unchanged (keep, %d)", got, enc.Offset(), off)
			}
		})
	}
	// The largest record that fits is accepted.
	enc := NewEncoder()
	overhead := len(`e 0 {"error":""}` + "\n")
	got, err := enc.AppendJSON(nil, TypeError, ErrorRecord{Error: strings.Repeat("e", MaxRecord-overhead)})
	if err != nil || len(got) != MaxRecord {
		t.Fatalf("a record of exactly MaxRecord bytes: %d bytes, %v", len(got), err)
	}
}

func TestAppendUnsequenced(t *testing.T) {
	got, err := AppendUnsequenced([]byte("x"), TypeResumed, Resumed{Nonce: "n1", From: 10, End: 20})
	if err != nil {
		t.Fatal(err)
	}
	if want := `xr - {"nonce":"n1","from":10,"end":20,"oldest":0}` + "\n"; string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	got, err = AppendUnsequenced(nil, TypeAlive, Alive{Nonce: "p", State: "idle", End: 5})
	if err != nil || string(got) != `a - {"nonce":"p","state":"idle","end":5}`+"\n" {
		t.Fatalf("alive record %q, %v", got, err)
	}
	for _, typ := range []Type{TypeHello, TypeOutput, TypeStatus, TypeExit} {
		if got, err := AppendUnsequenced([]byte("k"), typ, Exit{}); err == nil || string(got) != "k" {
			t.Errorf("AppendUnsequenced(%s) = %q, %v; want an error and dst unchanged", typ, got, err)
		}
	}
	if _, err := AppendUnsequenced(nil, TypeAlive, strings.Repeat("a", MaxRecord)); err == nil {
		t.Error("an over-long unsequenced record was accepted")
	}
}

func TestTypes(t *testing.T) {
	known := "hopdOPbsjexra"
	for b := 0; b < 256; b++ {
		typ := Type(b)
		if got, want := typ.Known(), strings.IndexByte(known, byte(b)) >= 0; got != want {
			t.Errorf("Type(%q).Known() = %v", byte(b), got)
		}
		if got, want := typ.Sequenced(), typ != TypeResumed && typ != TypeAlive; got != want {
			t.Errorf("Type(%q).Sequenced() = %v", byte(b), got)
		}
		if got, want := typ.IsOutput(), typ == TypeOutput || typ == TypePartial || typ == TypeBlock; got != want {
			t.Errorf("Type(%q).IsOutput() = %v", byte(b), got)
		}
		if got, want := typ.IsStderr(), typ == TypeStderr || typ == TypeStderrPartial; got != want {
			t.Errorf("Type(%q).IsStderr() = %v", byte(b), got)
		}
	}
	if TypeStatus.String() != "s" || Type(0).String() != "0x00" || Type(' ').String() != "0x20" || Type(0x80).String() != "0x80" {
		t.Errorf("String: %s %s %s %s", TypeStatus, Type(0), Type(' '), Type(0x80))
	}
	if (Record{Seq: 10, Size: 7}).Next() != 17 {
		t.Error("Record.Next")
	}
}
