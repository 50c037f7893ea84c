package client

import (
	"bytes"
	"os"
	"sync"
	"testing"
)

// screen is one terminal both the output and the notices are written to.
type screen struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A notice written while the output's line is open waits for the newline
// that ends it, and goes out right after it even when more output came in
// the same write; at a line's start it goes out at once.
func TestLineGateHoldsNoticesInsideALine(t *testing.T) {
	var term screen
	g := NewLineGate(&term)
	notices := g.Notices(&term)
	write := func(w interface{ Write([]byte) (int, error) }, s string) {
		t.Helper()
		if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
			t.Fatalf("write %q: %d, %v", s, n, err)
		}
	}
	write(notices, "N1\n") // nothing written yet: at a line's start
	write(g, "1.2.")
	if !g.MidLine() {
		t.Fatal("MidLine false after 1.2.")
	}
	write(notices, "N2\n")
	write(notices, "N3\n")
	write(g, "3.")
	if got := term.String(); got != "N1\n1.2.3." {
		t.Fatalf("a notice went into the open line: %q", got)
	}
	write(g, "4\n5.")
	if got := term.String(); got != "N1\n1.2.3.4\nN2\nN3\n5." {
		t.Fatalf("the notices did not follow the newline: %q", got)
	}
	write(g, "6\n")
	if g.MidLine() {
		t.Fatal("MidLine true after a newline")
	}
	write(notices, "N4\n")
	if got := term.String(); got != "N1\n1.2.3.4\nN2\nN3\n5.6\nN4\n" {
		t.Fatalf("a notice at a line's start waited: %q", got)
	}
}

// End releases the held notices, after a newline on the writer it is given
// when the output ends inside a line; then notices pass straight through.
func TestLineGateEnd(t *testing.T) {
	for _, tc := range []struct {
		name     string
		output   string
		newline  func(term *screen, g *LineGate) *screen
		want     string
		wantOpen bool
	}{
		{"open line, newline on the notices' screen", "1.2.3.", func(term *screen, _ *LineGate) *screen { return term }, "1.2.3.\nN1\nN2\n", false},
		{"open line, no newline", "1.2.3.", nil, "1.2.3.N1\nN2\n", true},
		{"closed line", "done\n", func(term *screen, _ *LineGate) *screen { return term }, "done\nN1\nN2\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var term screen
			g := NewLineGate(&term)
			notices := g.Notices(&term)
			g.Write([]byte(tc.output))
			notices.Write([]byte("N1\n"))
			var err error
			if tc.newline != nil {
				err = g.End(tc.newline(&term, g))
			} else {
				err = g.End(nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			notices.Write([]byte("N2\n"))
			if got := term.String(); got != tc.want || g.MidLine() != tc.wantOpen {
				t.Fatalf("screen %q MidLine %v; want %q, %v", got, g.MidLine(), tc.want, tc.wantOpen)
			}
		})
	}
	// The output's own writer takes the newline (a CI log that carries the
	// runner's lines after the job's): the output is written past the gate.
	var log screen
	g := NewLineGate(&log)
	g.Write([]byte("no newline"))
	if err := g.End(g); err != nil {
		t.Fatal(err)
	}
	if log.String() != "no newline\n" || g.MidLine() {
		t.Fatalf("End(g): %q, MidLine %v", log.String(), g.MidLine())
	}
}

// A session writes block payloads to a LineGate over a file in vectored
// writes, and the gate still knows where the line ends and releases the
// held notices after it.
func TestLineGateVectoredWrites(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g := NewLineGate(f)
	var notices bytes.Buffer
	nw := g.Notices(&notices)
	vw := outputVectorWriter(g)
	if vw != vectorWriter(g) {
		t.Fatalf("a session's vector writer for a LineGate is %T, want the gate", vw)
	}
	if err := vw.writeVec([][]byte{[]byte("a"), []byte("b\nc"), nil}); err != nil {
		t.Fatal(err)
	}
	nw.Write([]byte("held\n"))
	if notices.Len() != 0 || !g.MidLine() {
		t.Fatalf("notice written inside the line (%q), MidLine %v", notices.String(), g.MidLine())
	}
	if err := vw.writeVec([][]byte{[]byte("d\ne"), []byte("f\n")}); err != nil {
		t.Fatal(err)
	}
	if notices.String() != "held\n" || g.MidLine() {
		t.Fatalf("after the line ended: notices %q, MidLine %v", notices.String(), g.MidLine())
	}
	if err := vw.writeVec([][]byte{[]byte("g"), {}}); err != nil {
		t.Fatal(err)
	}
	if !g.MidLine() {
		t.Fatal("MidLine false after a vectored write ending in g")
	}
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "ab\ncd\nef\ng" {
		t.Fatalf("file %q", got)
	}
}
