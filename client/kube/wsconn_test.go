package kube_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/testing/attachserver"
	"github.com/tether-ci/tether/internal/testing/syncbuf"
)

// The WebSocket attach through the API server's stream translator (the
// upstream code) carries stdin and stdout byte for byte: a write far bigger
// than the connection's write buffer (sent as several messages) comes back
// whole from a container running cat, read in small and big pieces; the
// container's stderr goes to the log, not into stdout; the container's exit
// ends the stream with io.EOF; a closed connection's reads fail.
func TestWebSocketAttachCarriesStdinAndStdout(t *testing.T) {
	e := newEnv(t, attachserver.Options{})
	c, err := e.srv.AddContainer(ns, "cat", kube.BuildContainer,
		exec.Command("sh", "-c", "echo to stderr >&2; timeout 15 head -c 300000; echo more stderr >&2"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Kill)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tr := e.transport(t, "", "cat", kube.ProtocolWebSocket)
	var log syncbuf.Buffer
	tr.Options.Logger = slog.New(slog.NewTextHandler(&log, nil))
	conn, err := tr.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() }) // a stuck Read fails the test
	defer stop()
	if e.srv.AttachRequests("websocket") != 1 {
		t.Fatalf("%d WebSocket attach requests, want 1", e.srv.AttachRequests("websocket"))
	}
	want := make([]byte, 300000)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range want {
		want[i] = byte(rng.IntN(256))
	}
	werr := make(chan error, 1)
	go func() {
		// One big write, then small ones.
		_, err := conn.Write(want[:200000])
		for off := 200000; err == nil && off < len(want); off += 1000 {
			_, err = conn.Write(want[off : off+1000])
		}
		werr <- err
	}()
	var got bytes.Buffer
	buf := make([]byte, 64<<10)
	for got.Len() < len(want) {
		size := 1 + rng.IntN(len(buf))
		n, err := conn.Read(buf[:size])
		got.Write(buf[:n])
		if err != nil {
			t.Fatalf("Read after %d bytes: %v", got.Len(), err)
		}
	}
	if err := <-werr; err != nil {
		t.Fatalf("Write: %v", err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("stdout differs from stdin (%d bytes, want %d)", got.Len(), len(want))
	}
	if n, err := conn.Read(buf); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("Read after the container exited: %d bytes, %v; want io.EOF", n, err)
	}
	if !strings.Contains(log.String(), `msg="shim stderr" pod=ci/cat line="more stderr"`) {
		t.Errorf("the container's stderr was not logged; the log:\n%s", log.String())
	}
	if err := conn.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := conn.Read(buf); err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("Read after Close: %v; want the closed-connection error", err)
	}
	if _, err := conn.Write([]byte("x")); err == nil {
		t.Fatal("Write after Close succeeded")
	}
}
