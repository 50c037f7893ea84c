package local_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/local"
)

// A session keeps at most one ping in flight per connection: while the
// shim cannot answer (its stdout is full because the client stopped
// reading), the session sends no further ping, so pings never pile up in
// the shim's stdin ahead of a later connection's resume command. The test
// holds the client's reads for many ping intervals in the middle of a big
// output and counts the pings written meanwhile.
func TestAtMostOnePingInFlight(t *testing.T) {
	s := startShim(t)
	tr := &heldReads{Shim: s, release: make(chan struct{})}
	var out countingWriter
	o := fastOpts(nil)
	o.Output = &out
	o.PingInterval = 10 * time.Millisecond
	const size = 16 << 20
	// The script ends once the test saw pings go on after the hold.
	flag := filepath.Join(t.TempDir(), "flag")
	job := client.Job{Scripts: []string{script(t, "big.sh",
		"yes | head -c 16777216\nwhile [ ! -e "+flag+" ]; do sleep 0.01; done\n")}}
	type result struct {
		res client.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := client.Run(context.Background(), tr, job, o)
		done <- result{res, err}
	}()
	// Hold the reads once output flows, with the shim's output pipe
	// filling behind them.
	for out.n.Load() < 1<<20 {
		select {
		case r := <-done:
			t.Fatalf("the job ended (%v, %d bytes) before the test held its reads", r.err, out.n.Load())
		case <-time.After(time.Millisecond):
		}
	}
	tr.hold.Store(true)
	before := tr.pings.Load()
	// 300 ms are 30 ping intervals: a session that pings regardless of
	// answers writes a ping per interval.
	time.Sleep(300 * time.Millisecond)
	during := tr.pings.Load() - before
	tr.hold.Store(false)
	close(tr.release)
	// Answered pings let the next ones go.
	for deadline := time.Now().Add(30 * time.Second); tr.pings.Load() < before+during+2; {
		if time.Now().After(deadline) {
			t.Fatalf("pings stopped: %d in all, %d while reads were held; want more once the shim answered",
				tr.pings.Load(), during)
		}
		time.Sleep(time.Millisecond)
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.res.ExitCode != 0 {
		t.Fatalf("Run: %v (exit %d)", r.err, r.res.ExitCode)
	}
	if got := out.n.Load(); got != size || !bytes.Equal(out.buf.Bytes()[:4], []byte("y\ny\n")) {
		t.Fatalf("output %d bytes, want %d", got, size)
	}
	if during > 1 {
		t.Fatalf("%d pings written while the shim could not answer: want at most one ping in flight", during)
	}
	t.Logf("%d pings in all, %d while reads were held", tr.pings.Load(), during)
}

// heldReads is a local shim whose connections stop reading while hold is
// set (until release is closed) and count the ping commands written.
type heldReads struct {
	*local.Shim
	hold    atomic.Bool
	release chan struct{}
	pings   atomic.Int64
}

func (h *heldReads) Connect(ctx context.Context) (client.Conn, error) {
	c, err := h.Shim.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &heldConn{Conn: c, h: h}, nil
}

type heldConn struct {
	client.Conn
	h *heldReads
}

func (c *heldConn) Read(p []byte) (int, error) {
	if c.h.hold.Load() {
		<-c.h.release
	}
	return c.Conn.Read(p)
}

func (c *heldConn) Write(p []byte) (int, error) {
	c.h.pings.Add(int64(bytes.Count(p, []byte(`{"cmd":"ping"`))))
	return c.Conn.Write(p)
}
