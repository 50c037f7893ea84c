package shim

import (
	"bytes"
	"strings"
	"testing"
)

// collect runs pieces through a maskStream and returns what it emitted.
func collect(set *maskSet, pieces ...string) (string, []string) {
	var out bytes.Buffer
	var emitted []string
	ms := &maskStream{set: set, emit: func(b []byte) { out.Write(b); emitted = append(emitted, string(b)) }}
	for _, p := range pieces {
		ms.write([]byte(p))
	}
	ms.flush()
	return out.String(), emitted
}

func TestMaskStream(t *testing.T) {
	set := (*maskSet)(nil).with([]string{"s3cr3t-value", "p@ss word/1"})
	for _, tc := range []struct {
		name   string
		pieces []string
		want   string
	}{
		{"whole", []string{"token=s3cr3t-value end\n"}, "token=[MASKED] end\n"},
		{"split", []string{"token=s3cr", "3t-val", "ue end\n"}, "token=[MASKED] end\n"},
		{"split byte by byte", strings.Split("xs3cr3t-valuey", ""), "x[MASKED]y"},
		{"query-escaped", []string{"u=p%40ss+word%2F1\n"}, "u=[MASKED]\n"},
		{"path-escaped", []string{"/p@ss%20word%2F1/\n"}, "/[MASKED]/\n"},
		{"twice", []string{"s3cr3t-values3cr3t-value"}, "[MASKED][MASKED]"},
		{"prefix only, output ends", []string{"s3cr3t-val"}, "s3cr3t-val"},
		{"repeated first byte", []string{"ss3cr3t-value"}, "s[MASKED]"},
		{"no secret", []string{"plain output\n"}, "plain output\n"},
	} {
		if got, _ := collect(set, tc.pieces...); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Output that cannot start a masked value is not held back; a tail that can
// is held, at most the longest value minus one byte.
func TestMaskStreamHoldsOnlyPossiblePrefixes(t *testing.T) {
	set := (*maskSet)(nil).with([]string{"s3cr3t-value"})
	_, emitted := collect(set, "abc", "def s3c", "x")
	if len(emitted) < 2 || emitted[0] != "abc" || emitted[1] != "def " {
		t.Fatalf("emitted %q: want abc at once, then def before the possible prefix", emitted)
	}
	ms := &maskStream{set: set, emit: func([]byte) {}}
	ms.write([]byte("....s3cr3t-valu"))
	if len(ms.buf) != len("s3cr3t-valu") || len(ms.buf) > set.maxLen-1 {
		t.Fatalf("held %q", ms.buf)
	}
}

// A shorter value that is a prefix of a longer one never lets the longer
// one's rest through.
func TestMaskStreamPrefersTheLongerValue(t *testing.T) {
	set := (*maskSet)(nil).with([]string{"password1", "password12345678"})
	if got, _ := collect(set, "x password1", "2345678 y"); got != "x [MASKED] y" {
		t.Fatalf("%q", got)
	}
	if got, _ := collect(set, "x password1 y"); got != "x [MASKED] y" {
		t.Fatalf("%q", got)
	}
}

// The set keeps its values longest first however they were added, so the
// longest match wins.
func TestMaskSetKeepsLongestFirst(t *testing.T) {
	set := (*maskSet)(nil).with([]string{"password1", "password12345678"})
	set = set.with([]string{"pass-0123456789abcdef", "password1", "word-1234"})
	set = set.with([]string{"a longer secret value than any other"})
	for i := 1; i < len(set.values); i++ {
		if len(set.values[i-1]) < len(set.values[i]) {
			t.Fatalf("values not longest first: %q", set.values)
		}
	}
	// Seven forms: the spaced value also as a+longer… and a%20longer… .
	if len(set.values) != 7 || set.maxLen != len("a%20longer%20secret%20value%20than%20any%20other") {
		t.Fatalf("values %q, maxLen %d", set.values, set.maxLen)
	}
	if got, _ := collect(set, "x password12345678 y"); got != "x [MASKED] y" {
		t.Fatalf("%q", got)
	}
}

func TestRedactMasks(t *testing.T) {
	in := `{"cmd":"job","id":"j1","scripts":["/a"],"mask":["short"]}`
	got := redactMasks(in)
	if strings.Contains(got, "short") || !strings.Contains(got, `"id":"j1"`) {
		t.Fatalf("%s", got)
	}
	if got := redactMasks(`{"cmd":"mask","mask":["x"`); strings.Contains(got, `"x"`) {
		t.Fatalf("%s", got)
	}
}

func FuzzMaskStream(f *testing.F) {
	f.Add([]byte("token=s3cr3t-value end"), uint8(3))
	f.Add([]byte("s3cr3t-vals3cr3t-value"), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, cut uint8) {
		set := (*maskSet)(nil).with([]string{"s3cr3t-value"})
		var pieces []string
		step := int(cut%16) + 1
		for i := 0; i < len(data); i += step {
			pieces = append(pieces, string(data[i:min(i+step, len(data))]))
		}
		got, _ := collect(set, pieces...)
		want, _ := collect(set, string(data))
		if got != want {
			t.Fatalf("split %d: %q, whole: %q", step, got, want)
		}
		if strings.Contains(got, "s3cr3t-value") {
			t.Fatalf("secret in output %q", got)
		}
	})
}

func BenchmarkMaskStream80ByteLines(b *testing.B) {
	set := (*maskSet)(nil).with([]string{"s3cr3t-value", "another-secret-token"})
	line := bytes.Repeat([]byte("0123456789 abcdefghij "), 4)[:79]
	chunk := bytes.Repeat(append(line, '\n'), 3000)
	ms := &maskStream{set: set, emit: func([]byte) {}}
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		ms.write(chunk)
	}
}
