package gitlab

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"
)

// pipeConn is one end of a net.Pipe as a client.Conn.
type pipeConn struct{ net.Conn }

// A kept connection knows the shim's stream end its last stage ended at
// only while nothing came over it since: one byte, and the next stage
// asks the shim again.
func TestKeptConnectionKnowsTheEndWhileQuiet(t *testing.T) {
	ctx := t.Context()
	s := newSpareSet(ctx, slog.New(slog.DiscardHandler), func() {})
	defer s.closeAll()
	shim, agent := net.Pipe()
	defer shim.Close()
	conn := s.adopt("ns/p/build", pipeConn{agent})
	s.put("ns/p/build", conn, true, 1234, false, nil)

	c, end, known := s.take(ctx, "ns/p/build")
	if c == nil || !known || end != 1234 {
		t.Fatalf("take: conn %v, end %d, known %v; want the kept connection at 1234", c, end, known)
	}
	s.put("ns/p/build", c, true, 2000, false, nil)
	// The shim writes while no stage holds the connection.
	if _, err := shim.Write([]byte("a - {}\n")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		kept := s.conns["ns/p/build"]
		s.mu.Unlock()
		if kept != nil && kept.idle.Load() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the idle byte was not counted")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c, _, known = s.take(ctx, "ns/p/build")
	if c == nil || known {
		t.Fatalf("take after a byte: conn %v, known %v; want the connection, end unknown", c, known)
	}
	// A stage whose job did not end over its connection: not kept.
	s.put("ns/p/build", c, false, 0, false, nil)
	if c, _, _ := s.take(context.Background(), "ns/p/build"); c != nil {
		t.Fatal("a connection was kept after a failed stage")
	}
}

// What a stage has not read yet of one read of the kept connection stays
// as it came while the connection's next read arrives.
func TestKeptConnectionChunkSurvivesTheNextRead(t *testing.T) {
	ctx := t.Context()
	s := newSpareSet(ctx, slog.New(slog.DiscardHandler), func() {})
	defer s.closeAll()
	shim, agent := net.Pipe()
	defer shim.Close()
	conn := s.adopt("ns/p/build", pipeConn{agent})
	got := make([]byte, 1)
	write := func(p string) {
		t.Helper()
		if _, err := shim.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	write("abcd")
	if _, err := conn.Read(got); err != nil || string(got) != "a" {
		t.Fatalf("first read: %q, %v", got, err)
	}
	// The pump reads the next bytes while the stage still holds "bcd".
	write("WXYZ") // returns once the pump read it
	rest := make([]byte, 8)
	n, err := conn.Read(rest)
	if err != nil || string(rest[:n]) != "bcd" {
		t.Fatalf("the rest of the first read: %q, %v; want %q", rest[:n], err, "bcd")
	}
	n, err = conn.Read(rest)
	if err != nil || string(rest[:n]) != "WXYZ" {
		t.Fatalf("the second read: %q, %v; want %q", rest[:n], err, "WXYZ")
	}
}
