package client_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/protocol"
)

// benchStream is a complete job's record stream as a shim writes it: hello,
// begin, the output in 64 KiB reads' worth of records (block records when
// blocks is set, as the shim sends bulk output), status, job done.
func benchStream(b *testing.B, jobID string, output []byte, blocks bool) []byte {
	b.Helper()
	enc := protocol.NewEncoder()
	must := func(out []byte, err error) []byte {
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	s := must(enc.AppendJSON(nil, protocol.TypeHello, protocol.Hello{Protocol: protocol.Version, Shim: "bench", MaxRecord: protocol.MaxRecord, Replay: "file"}))
	s = must(enc.AppendJSON(s, protocol.TypeBegin, protocol.Begin{Script: "/s", Phase: "script", Job: jobID}))
	for data := output; len(data) > 0; {
		n := min(len(data), 64<<10)
		if blocks {
			s = enc.AppendBlocks(s, data[:n])
		} else {
			s = enc.AppendOutput(s, data[:n])
		}
		data = data[n:]
	}
	s = must(enc.AppendJSON(s, protocol.TypeStatus, protocol.Status{Script: "/s", Phase: "script", Job: jobID}))
	return must(enc.AppendJSON(s, protocol.TypeJob, protocol.JobDone{Job: jobID}))
}

// streamTransport serves a fixed record stream: each connection answers
// the session's resume command, then delivers the stream from the asked
// offset, as fast as the session reads it.
type streamTransport struct{ stream []byte }

func (t streamTransport) Connect(context.Context) (client.Conn, error) {
	return &streamConn{stream: t.stream, ready: make(chan struct{})}, nil
}

type streamConn struct {
	stream []byte
	once   sync.Once
	ready  chan struct{} // closed once r holds the resume answer and the stream
	r      io.Reader
}

func (c *streamConn) Write(p []byte) (int, error) {
	cmd, err := protocol.NewCommandReader(bytes.NewReader(p)).Next()
	if err != nil {
		return 0, fmt.Errorf("bench transport: %w", err)
	}
	if cmd.Cmd == protocol.CmdResume {
		c.once.Do(func() {
			ans, err := protocol.AppendUnsequenced(nil, protocol.TypeResumed, protocol.Resumed{Nonce: cmd.Nonce, From: cmd.From, End: int64(len(c.stream))})
			if err != nil {
				panic(err)
			}
			c.r = io.MultiReader(bytes.NewReader(ans), bytes.NewReader(c.stream[cmd.From:]))
			close(c.ready)
		})
	}
	return len(p), nil
}

func (c *streamConn) Read(p []byte) (int, error) {
	<-c.ready
	return c.r.Read(p)
}

func (c *streamConn) Close() error { return nil }

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// BenchmarkSessionDecode measures the client's receive path: records read
// from a connection, decoded, checked against the expected offset and the
// output bytes written to Options.Output.
func BenchmarkSessionDecode(b *testing.B) {
	const total = 4 << 20
	line := []byte("0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ build step ok\n")
	unit := []byte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
	for _, s := range []struct {
		name   string
		data   []byte
		blocks bool
	}{
		{"lines80", bytes.Repeat(line, total/len(line)), false},
		{"nonewline", bytes.Repeat(unit, total/len(unit)), false},
		{"blocks", bytes.Repeat(line, total/len(line)), true},
	} {
		b.Run(s.name, func(b *testing.B) {
			const id = "bench-job"
			t := streamTransport{stream: benchStream(b, id, s.data, s.blocks)}
			b.SetBytes(int64(len(s.data)))
			b.ReportAllocs()
			for b.Loop() {
				out := &countWriter{}
				res, err := client.Run(context.Background(), t, client.Job{ID: id, Scripts: []string{"/s"}}, client.Options{Output: out})
				if err != nil {
					b.Fatal(err)
				}
				if out.n != int64(len(s.data)) || res.Offset != int64(len(t.stream)) {
					b.Fatalf("got %d output bytes and offset %d, want %d and %d", out.n, res.Offset, len(s.data), len(t.stream))
				}
			}
		})
	}
}
