package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/protocol"
)

// jobTrace is when each step of one job's session happened, from the
// moment its clock started (the request, as an agent sees a stage's).
type jobTrace struct {
	start time.Time
	mu    sync.Mutex
	// upgraded: Connect returned (WebSocket: the API server answered the
	// upgrade); firstByte: the first bytes from the shim (its resume
	// answer); begin: the script's begin record; output: the first output
	// byte written; 0 when it did not happen.
	upgraded, firstByte, begin, output time.Duration
}

func (t *jobTrace) note(at *time.Duration) {
	t.mu.Lock()
	if *at == 0 {
		*at = time.Since(t.start)
	}
	t.mu.Unlock()
}

// tracedTransport is a transport whose first Connect returns first (an
// attach opened earlier, nil: none) and whose connections note the
// trace's upgrade and first byte.
type tracedTransport struct {
	t     client.Transport
	first client.Conn
	trace *jobTrace
}

func (tt *tracedTransport) Connect(ctx context.Context) (client.Conn, error) {
	c := tt.first
	tt.first = nil
	if c == nil {
		var err error
		if c, err = tt.t.Connect(ctx); err != nil {
			return nil, err
		}
	}
	tt.trace.note(&tt.trace.upgraded)
	return &tracedConn{Conn: c, trace: tt.trace}, nil
}

type tracedConn struct {
	client.Conn
	trace *jobTrace
}

func (c *tracedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.trace.note(&c.trace.firstByte)
	}
	return n, err
}

// traceOptions are a session's options that fill trace: the begin record
// (an event) and the first output byte.
func traceOptions(trace *jobTrace) client.Options {
	return client.Options{
		Output: writerFunc(func(p []byte) {
			if len(p) > 0 {
				trace.note(&trace.output)
			}
		}),
		Events: func(e client.Event) {
			if e.Kind == client.EventScriptBegin {
				trace.note(&trace.begin)
			}
		},
	}
}

type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

// pingRoundTrip times one ping command's answer on an open connection
// whose session has ended (its records are read and dropped until the
// answer comes).
func pingRoundTrip(c client.Conn, nonce string) (time.Duration, error) {
	line, err := protocol.AppendCommand(nil, protocol.Command{Cmd: protocol.CmdPing, Nonce: nonce})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if _, err := c.Write(line); err != nil {
		return 0, err
	}
	dec := protocol.NewDecoder(c)
	dec.Resync(true)
	for {
		rec, err := dec.Next()
		if errors.Is(err, protocol.ErrMalformed) {
			continue // a connection read from anywhere
		}
		if err != nil {
			return 0, fmt.Errorf("read the ping's answer: %w", err)
		}
		if rec.Type == protocol.TypeAlive && bytes.Contains(rec.Payload, []byte(nonce)) {
			return time.Since(start), nil
		}
	}
}
