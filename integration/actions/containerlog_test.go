package actions

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// logLine is one entry of a container's log as the kubelet keeps it.
type logLine struct {
	ts      time.Time
	content string // its bytes, with the newline if it has one
}

// render is the log as pods/log returns it with timestamps=true from
// since: each line's timestamp (RFC 3339 with nanoseconds, trailing
// zeros trimmed, as the kubelet formats it), a space, its bytes.
func render(lines []logLine, since time.Time) []byte {
	var b bytes.Buffer
	for _, l := range lines {
		if l.ts.Before(since) {
			continue
		}
		b.WriteString(l.ts.Format(time.RFC3339Nano) + " " + l.content)
	}
	return b.Bytes()
}

func testLog() ([]logLine, string) {
	t0 := time.Date(2026, 11, 27, 1, 2, 3, 0, time.UTC)
	lines := []logLine{
		{t0, "first line\n"},
		{t0.Add(100 * time.Millisecond), "same time A\n"},
		{t0.Add(100 * time.Millisecond), "same time B\n"},
		{t0.Add(100 * time.Millisecond), "same time B\n"}, // a repeat that is no duplicate
		{t0.Add(time.Second + 5), "binary \x00\xff\xfe\r in a line\n"},
		{t0.Add(time.Second + 7), strings.Repeat("long ", 5000) + "\n"},
		{t0.Add(2 * time.Second), "  spaces  2026-01-01T00:00:00Z inside\n"},
		{t0.Add(3 * time.Second), "last line without newline"},
	}
	var want strings.Builder
	for _, l := range lines {
		want.WriteString(l.content)
	}
	return lines, want.String()
}

// TestLogCursorWhole reads a log in one go and in chunks of every size
// from 1 byte: the output is the container's bytes.
func TestLogCursorWhole(t *testing.T) {
	lines, want := testLog()
	raw := render(lines, time.Time{})
	for _, chunk := range []int{1, 2, 3, 7, 64, 4096, len(raw)} {
		var out bytes.Buffer
		c := &logCursor{out: &out}
		c.reset()
		for p := raw; len(p) > 0; {
			n := min(chunk, len(p))
			if _, err := c.Write(p[:n]); err != nil {
				t.Fatalf("chunk %d: %v", chunk, err)
			}
			p = p[n:]
		}
		if out.String() != want {
			t.Fatalf("chunk %d: got %d bytes, want %d", chunk, out.Len(), len(want))
		}
	}
}

// TestLogCursorResume cuts the read after every byte position, reads the
// log again from the cursor's second (as pods/log with sinceTime does)
// and checks that nothing was lost or written twice.
func TestLogCursorResume(t *testing.T) {
	lines, want := testLog()
	raw := render(lines, time.Time{})
	for cut := 0; cut <= len(raw); cut += 1 + cut/50 {
		var out bytes.Buffer
		c := &logCursor{out: &out}
		c.reset()
		if _, err := c.Write(raw[:cut]); err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		// A second cut, somewhere in the second read.
		again := render(lines, c.since())
		c.reset()
		half := len(again) / 2
		if _, err := c.Write(again[:half]); err != nil {
			t.Fatalf("cut at %d, then %d: %v", cut, half, err)
		}
		c.reset()
		if _, err := c.Write(render(lines, c.since())); err != nil {
			t.Fatalf("cut at %d, third read: %v", cut, err)
		}
		if out.String() != want {
			t.Fatalf("cut at %d: got %q..., want %d bytes (got %d)", cut, firstDiff(out.String(), want), len(want), out.Len())
		}
	}
}

// firstDiff shows where got first differs from want.
func firstDiff(got, want string) string {
	for i := 0; i < len(got) && i < len(want); i++ {
		if got[i] != want[i] {
			return fmt.Sprintf("at %d: %q vs %q", i, got[i:min(i+20, len(got))], want[i:min(i+20, len(want))])
		}
	}
	return fmt.Sprintf("lengths %d vs %d", len(got), len(want))
}

// TestLogCursorRefusesUntimed refuses a log without timestamps rather
// than writing something else than the container's bytes.
func TestLogCursorRefusesUntimed(t *testing.T) {
	c := &logCursor{out: &bytes.Buffer{}}
	c.reset()
	if _, err := c.Write([]byte("no timestamp here\n")); err == nil {
		t.Fatal("a line without a timestamp was accepted")
	}
	c = &logCursor{out: &bytes.Buffer{}}
	c.reset()
	if _, err := c.Write(bytes.Repeat([]byte("x"), 100)); err == nil {
		t.Fatal("a long header without a space was accepted")
	}
}
