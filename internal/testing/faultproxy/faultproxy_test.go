package faultproxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// echoServer echoes every connection until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func TestRelaysExactlyWhenNotCutting(t *testing.T) {
	p, err := Start(echoServer(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := bytes.Repeat([]byte("0123456789abcdef"), 64*1024) // 1 MiB
	go func() {
		_, _ = c.Write(want)
		_ = c.(*net.TCPConn).CloseWrite()
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read through proxy: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("relayed %d bytes, want %d identical bytes", len(got), len(want))
	}
	if p.Cuts() != 0 {
		t.Fatalf("Cuts() = %d without any cut rule", p.Cuts())
	}
}

func TestCutsAfterByteBudgetWithReset(t *testing.T) {
	p, err := Start(echoServer(t), Options{MinBytes: 1000, MaxBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// 600 bytes out + 600 echoed back exceeds the 1000-byte budget: the
	// echo is cut after 400 bytes.
	if _, err := c.Write(bytes.Repeat([]byte("x"), 600)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(c)
	if err == nil {
		t.Fatal("read ended cleanly; want a connection reset")
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read error = %v; want ECONNRESET", err)
	}
	if len(got) != 400 {
		t.Fatalf("got %d bytes before the cut, want 400", len(got))
	}
	if p.Cuts() != 1 {
		t.Fatalf("Cuts() = %d, want 1", p.Cuts())
	}
}

func TestCutAllAndMaxCuts(t *testing.T) {
	p, err := Start(echoServer(t), Options{MinBytes: 10, MaxBytes: 10, MaxCuts: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	roundTrip := func(c net.Conn, n int) error {
		if _, err := c.Write(bytes.Repeat([]byte("y"), n)); err != nil {
			return err
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := io.ReadFull(c, make([]byte, n))
		return err
	}
	c1, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	if err := roundTrip(c1, 100); err == nil {
		t.Fatal("first connection survived its 10-byte budget")
	}
	// MaxCuts reached: the next connection is never cut at random...
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := roundTrip(c2, 100); err != nil {
		t.Fatalf("second connection: %v (MaxCuts should have stopped random cuts)", err)
	}
	// ...but CutAll still cuts it.
	if n := p.CutAll(); n != 1 {
		t.Fatalf("CutAll() = %d, want 1", n)
	}
	if err := roundTrip(c2, 10); err == nil {
		t.Fatal("connection still works after CutAll")
	}
	if p.Cuts() != 2 {
		t.Fatalf("Cuts() = %d, want 2", p.Cuts())
	}
}

func TestBlocked(t *testing.T) {
	p, err := Start(echoServer(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.SetBlocked(true)
	// The reset may even beat the end of the dial.
	if c, err := net.Dial("tcp", p.Addr()); err == nil {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a blocked proxy kept a connection open: %v", err)
		}
		c.Close()
	}
	p.SetBlocked(false)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("ok")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, make([]byte, 2)); err != nil {
		t.Fatalf("unblocked proxy: %v", err)
	}
}
