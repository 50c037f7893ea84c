package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// The seeds below run as ordinary tests in `go test` (and so in make
// test); `make fuzz` (scripts/fuzz.sh) fuzzes each target for a while.

// recordSeeds returns record lines, valid and not, for the fuzz corpora.
func recordSeeds() []string {
	enc := NewEncoder()
	var valid []byte
	valid, _ = enc.AppendJSON(valid, TypeHello, Hello{Protocol: Version, Shim: "dev", MaxRecord: MaxRecord, PID: 1, Shell: "/bin/bash", Replay: "file"})
	valid, _ = enc.AppendJSON(valid, TypeBegin, Begin{Script: "/s/a.sh", Phase: "script", Job: "j"})
	valid = enc.AppendOutput(valid, []byte("out \\ \r \x00 \xff é\nmore"))
	valid = enc.AppendBlocks(valid, []byte("raw \\ \r \x00\n\xff é\nd 0 3\n"))
	valid = enc.AppendStderr(valid, []byte("err \\ \r \x00 \xff é\nmore"))
	valid, _ = enc.AppendJSON(valid, TypeStatus, Status{Script: "/s/a.sh", CommandExitCode: 130, Signal: "SIGINT", DurationMS: 5})
	valid, _ = enc.AppendJSON(valid, TypeJob, JobDone{ExitCode: 130, FailedScript: "/s/a.sh", Job: "j"})
	valid, _ = enc.AppendJSON(valid, TypeError, ErrorRecord{Error: "bad", Input: "x"})
	valid, _ = enc.AppendJSON(valid, TypeExit, Exit{Reason: ReasonDeadline, ExitCode: 124, Message: "deadline"})
	valid, _ = AppendUnsequenced(valid, TypeResumed, Resumed{Nonce: "n", From: 0, End: 10})
	valid, _ = AppendUnsequenced(valid, TypeAlive, Alive{Nonce: "p", State: "idle"})
	seeds := []string{
		"", "\n", "o 0 \n", "p 0 x\n", "o 01 x\n", "z 0 {}\n", "r 0 {}\n", "s - {}\n",
		`o 0 \x` + "\n", `o 0 \q` + "\n", `o 0 \xFF\x00\\\r` + "\n", "o 9223372036854775807 x\n",
		"o 9223372036854775808 x\n", "s 0 []\n", "s 0 {\n}\n", "o 0 a\no 6 b\n",
		"d 0 1\nx\n", "d 0 0\n\n", "O 0 \n", "P 0 \\x\n", "O - x\n", "d 0 01\nx\n", "d 0 16379\n", "d 0 16380\n", "d - 1\nx\n", "d 0 x\n", "d 0 2\nx\n",
	}
	for _, line := range bytes.SplitAfter(valid, []byte("\n")) {
		if len(line) > 0 {
			seeds = append(seeds, string(line))
		}
	}
	return seeds
}

func FuzzParse(f *testing.F) {
	for _, s := range recordSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		rec, _, err := Parse(line, nil)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse error %v does not wrap ErrMalformed", err)
			}
			return
		}
		// A record that parses is one line within the limit, of a known
		// type, and the sequence rule holds.
		if len(line) > MaxRecord || bytes.IndexByte(line, '\n') != len(line)-1 {
			t.Fatalf("accepted %q (size %d)", line, rec.Size)
		}
		if rec.Type == TypeBlock {
			// A block's line is its header: the record is longer, by a
			// payload of at least one byte and a newline.
			if rec.Payload != nil || rec.Size < len(line)+2 || rec.Size > MaxRecord {
				t.Fatalf("block header %q: size %d, payload %q", line, rec.Size, rec.Payload)
			}
			return
		}
		if rec.Size != len(line) {
			t.Fatalf("accepted %q (size %d)", line, rec.Size)
		}
		if !rec.Type.Known() || rec.Type.Sequenced() != (rec.Seq >= 0) {
			t.Fatalf("accepted type %s with seq %d", rec.Type, rec.Seq)
		}
		if !rec.Type.IsOutput() && !rec.Type.IsStderr() {
			if len(rec.Payload) < 2 || rec.Payload[0] != '{' || rec.Payload[len(rec.Payload)-1] != '}' {
				t.Fatalf("JSON payload %q is not an object", rec.Payload)
			}
			return
		}
		// Re-encoding the decoded output gives records that decode to the
		// same bytes (and, for one line, a record of the same type).
		payload := bytes.Clone(rec.Payload)
		full, appendAgain := TypeOutput, (*Encoder).AppendOutput
		if rec.Type.IsStderr() {
			full, appendAgain = TypeStderr, (*Encoder).AppendStderr
		}
		if rec.Type == full && (len(payload) == 0 || payload[len(payload)-1] != '\n') {
			t.Fatalf("output record payload %q does not end in a newline", payload)
		}
		enc := &Encoder{next: rec.Seq}
		again := appendAgain(enc, nil, payload)
		if rec.Type != full && len(payload) == 0 {
			if len(again) != 0 {
				t.Fatalf("empty partial payload re-encoded as %q", again)
			}
			return
		}
		recs := checkStream(t, again, rec.Seq)
		var got []byte
		for _, r := range recs {
			got = append(got, r.Payload...)
		}
		if !bytes.Equal(got, payload) {
			t.Fatalf("re-encoded %q decodes to %q", payload, got)
		}
		if len(recs) == 1 && bytes.IndexByte(payload, '\n') == len(payload)-1 == (rec.Type == full) && recs[0].Type != rec.Type {
			t.Fatalf("%s record %q re-encoded as a %s record", rec.Type, line, recs[0].Type)
		}
	})
}

func FuzzDecoder(f *testing.F) {
	seeds := recordSeeds()
	var all []byte
	for _, s := range seeds {
		f.Add([]byte(s), uint16(0), uint32(0))
		all = append(all, s...)
	}
	f.Add(all, uint16(0), uint32(0))
	f.Add([]byte("\no 0 y\n"), uint16(0), uint32(5*MaxRecord))
	f.Add(all, uint16(300), uint32(MaxRecord))
	f.Fuzz(func(t *testing.T, stream []byte, at uint16, long uint32) {
		// A run of long%(5*MaxRecord) bytes inserted at at: the fuzzer
		// reaches over-long lines without carrying huge inputs around.
		if n := int(long % (5 * MaxRecord)); n > 0 {
			i := int(at) % (len(stream) + 1)
			stream = append(append(append([]byte{}, stream[:i]...), bytes.Repeat([]byte{'o'}, n)...), stream[i:]...)
		}
		dec := NewDecoder(bytes.NewReader(stream))
		lines := 0
		for {
			rec, err := dec.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if errors.Is(err, ErrTruncated) {
				if _, err := dec.Next(); !errors.Is(err, io.EOF) {
					t.Fatalf("after ErrTruncated: %v", err)
				}
				break
			}
			lines++
			if lines > len(stream)+1 {
				t.Fatal("the decoder returns more results than the stream has lines")
			}
			if err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("unexpected error %v", err)
				}
				continue
			}
			if rec.Size > MaxRecord || !rec.Type.Known() {
				t.Fatalf("bad record %+v", rec)
			}
		}
	})
}

func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("hello\nworld"), uint16(3), uint16(0))
	f.Add([]byte(""), uint16(0), uint16(0))
	f.Add([]byte("\\\r\n\x00\x7f\xff\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"), uint16(1), uint16(0))
	f.Add([]byte(`s 0 {"command_exit_code":0,"script":"x"}`+"\n"), uint16(7), uint16(2))
	f.Add([]byte("€"), uint16(4093), uint16(6000))
	f.Add([]byte("a€"), uint16(4093), uint16(3000))
	f.Add([]byte("\xff"), uint16(0), uint16(5000))
	f.Add([]byte("abcdefgh"), uint16(16380), uint16(2100))
	// Every byte class the encoder treats specially, at every position of
	// an 8-byte word inside a longer plain run (the encoder tests eight
	// bytes at a time).
	for _, b := range []byte{'\\', '\r', '\n', 0x00, 0x1f, 0x7f, 0x80, 0xc3, 0xff, '\t', 0x1b, ' ', '~'} {
		for pos := range 8 {
			unit := []byte("abcdefghijklmnopqrstuvwx")
			unit[8+pos] = b
			f.Add(unit, uint16(pos), uint16(0))
		}
	}
	f.Fuzz(func(t *testing.T, unit []byte, cut, repeat uint16) {
		// data is unit repeated: the fuzzer reaches lines longer than a
		// record without carrying huge inputs around.
		n := 1 + int(repeat)
		if len(unit) > 0 && len(unit)*n > 4*MaxRecord {
			n = max(1, 4*MaxRecord/len(unit))
		}
		data := bytes.Repeat(unit, n)
		// Encode in two writes split at cut, check the stream, decode.
		at := int(cut) % (len(data) + 1)
		enc, ref := NewEncoder(), &refEncoder{}
		stream := enc.AppendOutput(nil, data[:at])
		stream = enc.AppendOutput(stream, data[at:])
		refStream := ref.appendOutput(ref.appendOutput(nil, data[:at]), data[at:])
		if !bytes.Equal(stream, refStream) {
			t.Fatalf("encoder and reference encoder differ at byte %d", firstDiff(stream, refStream))
		}
		var got []byte
		for _, rec := range checkStream(t, stream, 0) {
			if !rec.Type.IsOutput() {
				t.Fatalf("output encoded as a %s record", rec.Type)
			}
			got = append(got, rec.Payload...)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("round trip changed %q into %q", data, got)
		}
	})
}

func FuzzCommandReader(f *testing.F) {
	for _, s := range []string{
		"/a\n", "\x18/a\n", "/a\r\n", "\n\n", "half\x18/b\n", "\x18/torn",
		"\x18{\"cmd\":\"job\",\"id\":\"j\",\"scripts\":[\"/a\"],\"after\":[\"/b\"]}\n",
		"\x18{\"cmd\":\"cancel\",\"grace_ms\":10}\n\x18{\"cmd\":\"ping\",\"nonce\":\"n\"}\n",
		"\x18{\"cmd\":\"resume\",\"from\":12,\"nonce\":\"r\"}\n\x18{\"cmd\":\"exit\"}\n",
		"{\"cmd\":\"exit\"}}\n", "{\"cmd\":\"run\",\"script\":\" \"}\n", "{\n", "\xff\xfe\n",
		"{\"cmd\":\"run\",\"script\":\"a\\r\"}\n", "{\"CMD\":\"exit\"}\n", "/p\r\r\n",
		"\x18{\"cmd\":\"job\",\"id\":\"w\",\"scripts\":[\"/f/a\"],\"env_file\":\"/f/.env-1\",\"deadline_ms\":60000,\"ttl_ms\":900000}\n",
		"{\"cmd\":\"run\",\"script\":\"/a\",\"env_file\":\"/f/e\"}\n", "{\"cmd\":\"job\",\"scripts\":[\"/a\"],\"deadline_ms\":-1}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		r := NewCommandReader(bytes.NewReader(input))
		var cmds []Command
		for i := 0; ; i++ {
			if i > len(input)+2 {
				t.Fatal("more results than the input has lines")
			}
			c, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			var ce *CommandError
			if err != nil {
				if !errors.As(err, &ce) {
					t.Fatalf("error %v is not a *CommandError", err)
				}
				continue
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("returned an invalid command %+v: %v", c, err)
			}
			cmds = append(cmds, c)
		}
		// Every command read re-encodes (unless it holds bytes JSON cannot
		// carry) and reads back equal.
		var wire []byte
		var sent []Command
		for _, c := range cmds {
			b, err := AppendCommand(wire, c)
			if err != nil {
				if c.Cmd == CmdRun && !plainPath(c.Script) {
					continue // e.g. a path with bytes that are not UTF-8 ending in '\r'
				}
				t.Fatalf("AppendCommand(%+v): %v", c, err)
			}
			wire = b
			sent = append(sent, c)
		}
		r = NewCommandReader(bytes.NewReader(wire))
		for _, want := range sent {
			got, err := r.Next()
			if err != nil || !commandsEqual(got, want) {
				gotJSON, _ := json.Marshal(got)
				wantJSON, _ := json.Marshal(want)
				t.Fatalf("re-read %s, %v; want %s (wire %q)", gotJSON, err, wantJSON, wire)
			}
		}
		if _, err := r.Next(); !errors.Is(err, io.EOF) {
			t.Fatalf("after the re-encoded commands: %v", err)
		}
	})
}

func FuzzEnvFile(f *testing.F) {
	for _, s := range []string{"", "A=1\x00", "A=1\x00B=x=y\nz\x00", "=1\x00", "A\x00", "A=1", "\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		env, err := ParseEnvFile(data)
		if err != nil {
			return
		}
		m := map[string]string{}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
		enc, err := EncodeEnvFile(m)
		if err != nil {
			t.Fatalf("parsed %q but cannot encode it back: %v", env, err)
		}
		back, err := ParseEnvFile(enc)
		if err != nil || len(back) != len(m) {
			t.Fatalf("round trip of %q: %q, %v", env, back, err)
		}
	})
}
