package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1073741824": 1 << 30, "10GiB": 10 << 30, "512MiB": 512 << 20, "64 KiB": 64 << 10} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GiB", "1.5GiB", "ten"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) succeeded, want an error", in)
		}
	}
}

func TestDurationStats(t *testing.T) {
	var d durations
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	if got := d.median(); got != 50500*time.Microsecond {
		t.Errorf("median = %s, want 50.5ms", got)
	}
	for p, want := range map[float64]time.Duration{50: 50 * time.Millisecond, 99: 99 * time.Millisecond, 100: 100 * time.Millisecond, 1: time.Millisecond} {
		if got := d.percentile(p); got != want {
			t.Errorf("percentile(%g) = %s, want %s", p, got, want)
		}
	}
	if d[0] != 100*time.Millisecond {
		t.Error("the statistics reordered their input")
	}
}

// TestLogParserRoundTrip feeds the runner-side parser what the read-logs
// emulation writes for output cut into arbitrary pieces (partial lines at
// EOF, 16 KiB pieces of long lines, the exit-code line split anywhere) and
// checks it gives back exactly the script's bytes and exit code.
func TestLogParserRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range 200 {
		var out []byte
		for range rng.IntN(40) {
			switch rng.IntN(4) {
			case 0:
				out = append(out, bytes.Repeat([]byte("x"), rng.IntN(40000))...)
			case 1:
				out = append(out, "a line\n"...)
			case 2:
				out = append(out, '{', '"') // starts like the marker
			default:
				out = append(out, '.')
			}
		}
		code := rng.IntN(256)
		stream := append(append([]byte(nil), out...), fmt.Sprintf(`{"command_exit_code": %d, "script": "/s"}`+"\n", code)...)
		var lines []byte
		var offset int64
		for rest := stream; len(rest) > 0; {
			// A piece ends at a newline, at 16 KiB, or anywhere (EOF).
			n := len(rest)
			if j := bytes.IndexByte(rest, '\n'); j >= 0 {
				n = j + 1
			}
			n = min(n, readLogsBuf)
			if rng.IntN(3) == 0 {
				n = 1 + rng.IntN(n)
			}
			offset += int64(n)
			lines = appendLogLine(lines, offset, rest[:n])
			rest = rest[n:]
		}
		var got bytes.Buffer
		gotCode, err := parseReadLogs(bytes.NewReader(lines), &got)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if gotCode != code || !bytes.Equal(got.Bytes(), out) {
			t.Fatalf("case %d: got code %d and %d bytes, want %d and %d bytes", i, gotCode, got.Len(), code, len(out))
		}
	}
}

func TestLogParserRejectsBadOffsets(t *testing.T) {
	if _, err := parseReadLogs(bytes.NewReader([]byte("5 abc\n")), &bytes.Buffer{}); err == nil {
		t.Error("a line whose offset step does not match its length was accepted")
	}
	if _, err := parseReadLogs(bytes.NewReader([]byte("4 abc\n")), &bytes.Buffer{}); err == nil {
		t.Error("a stream without the exit-code line was accepted")
	}
}

func TestMarkerPrefixLen(t *testing.T) {
	for in, want := range map[string]int{".": 0, "ab{": 1, `x{"command`: 9, `{"command_exit_code": `[:21]: 21, "{x": 0} {
		if got := markerPrefixLen([]byte(in)); got != want {
			t.Errorf("markerPrefixLen(%q) = %d, want %d", in, got, want)
		}
	}
}

// scriptCPU reads the `times` output of dash and of bash.
func TestScriptCPU(t *testing.T) {
	dir := t.TempDir()
	for in, want := range map[string]time.Duration{
		"0m0.010000s 0m0.020000s\n0m1.500000s 1m0.250000s\n": 61780 * time.Millisecond,
		"0m0.004s 0m0.000s\n0m0.300s 0m0.120s\n":             424 * time.Millisecond,
	} {
		p := dir + "/times"
		if err := os.WriteFile(p, []byte(in), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := scriptCPU(p)
		if err != nil || got.Round(time.Millisecond) != want {
			t.Errorf("scriptCPU(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	p := dir + "/bad"
	if err := os.WriteFile(p, []byte("nothing here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := scriptCPU(p); err == nil {
		t.Error("scriptCPU of a malformed file succeeded")
	}
}

// The overhead verdict pairs each round's variant with the baseline of the
// same round: a round that the machine's other load slowed for both moves
// neither difference, where the difference of the two medians mixes rounds.
func TestPairedCPUPairsRounds(t *testing.T) {
	runs := func(cpu ...time.Duration) []outcome {
		var o []outcome
		for _, c := range cpu {
			o = append(o, outcome{relayCPU: c})
		}
		return o
	}
	// 10 scripts per run. Per script the baseline took 1.0, 3.0 and 1.1 ms
	// in the three rounds, the variant 1.2, 3.2 and 1.25 ms: +0.2, +0.2 and
	// +0.15 ms, median +0.2 ms (the medians' difference, 1.25 − 1.1, would
	// be +0.15 ms).
	base := &overheadVariant{runs: runs(10*time.Millisecond, 30*time.Millisecond, 11*time.Millisecond)}
	v := &overheadVariant{runs: runs(12*time.Millisecond, 32*time.Millisecond, 12500*time.Microsecond)}
	if got, want := pairedCPU(v, base, 10, 10), 200*time.Microsecond; got != want {
		t.Errorf("paired overhead %s, want %s", got, want)
	}
}
