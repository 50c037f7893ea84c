package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"k8s.io/client-go/tools/remotecommand"
)

// errConnClosed is what a closed connection's pending reads and writes see.
var errConnClosed = errors.New("attach connection closed")

// closeWait bounds how long Close waits for the attach stream to end.
const closeWait = 5 * time.Second

// conn is one attach session. Its stdin pipe stays open for the whole
// session: closing an attach's stdin detaches it (stdinOnce=false), so it
// is only closed by Close, with the stream already cancelled.
type conn struct {
	stdinW  *io.PipeWriter
	stdoutR *io.PipeReader
	cancel  context.CancelFunc
	done    chan struct{} // closed when the stream ended; err is set then
	err     error
	once    sync.Once
	// closeWait bounds how long Close waits for the stream to end.
	closeWait time.Duration
}

// dial starts an attach stream with exec and returns once the streams are
// established (the executor started reading stdin), the stream failed, ctx
// ended or timeout passed. The stream itself does not follow ctx: it lives
// until Close or until it breaks.
func dial(ctx context.Context, exec remotecommand.Executor, timeout time.Duration, log *slog.Logger) (*conn, error) {
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &conn{stdinW: stdinW, stdoutR: stdoutR, cancel: cancel, done: make(chan struct{}), closeWait: closeWait}
	ready := make(chan struct{})
	in := &readyReader{r: stdinR, ready: ready}
	stderr := &lineLogger{log: log}
	go func() {
		err := exec.StreamWithContext(sctx, remotecommand.StreamOptions{Stdin: in, Stdout: stdoutW, Stderr: stderr})
		stderr.flush()
		if err == nil {
			err = io.EOF // the container exited or the server ended the session
		} else {
			err = fmt.Errorf("attach stream: %w", err)
		}
		c.err = err
		stdoutW.CloseWithError(err)
		_ = stdinR.Close()
		close(c.done)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-ready:
		return c, nil
	case <-c.done:
		err := c.err
		if errors.Is(err, io.EOF) {
			err = errors.New("attach ended before its streams were established")
		}
		return nil, err
	case <-ctx.Done():
		_ = c.Close()
		return nil, fmt.Errorf("attach: %w", context.Cause(ctx))
	case <-t.C:
		_ = c.Close()
		return nil, fmt.Errorf("attach: streams not established within %s", timeout)
	}
}

// Read reads the container's stdout (the shim's records).
func (c *conn) Read(p []byte) (int, error) { return c.stdoutR.Read(p) }

// Write writes to the container's stdin (commands to the shim).
func (c *conn) Write(p []byte) (int, error) { return c.stdinW.Write(p) }

// Close ends the attach session; the shim keeps running. It returns an
// error when the stream has not ended within closeWait (client-go's stream
// goroutine is then left to end on its own).
func (c *conn) Close() error {
	c.once.Do(func() {
		c.cancel()
		c.stdoutR.CloseWithError(errConnClosed)
		_ = c.stdinW.Close() // EOF, not an error: client-go logs stdin copy errors
	})
	t := time.NewTimer(c.closeWait)
	defer t.Stop()
	select {
	case <-c.done:
		return nil
	case <-t.C:
		return fmt.Errorf("kube transport: the attach stream did not end within %s of its close", c.closeWait)
	}
}

// readyReader closes ready at the first Read: client-go reads stdin only
// once every stream of the attach session exists.
type readyReader struct {
	r     io.Reader
	ready chan struct{}
	once  sync.Once
}

func (r *readyReader) Read(p []byte) (int, error) {
	r.once.Do(func() { close(r.ready) })
	return r.r.Read(p)
}

// lineLogger logs what the shim writes to stderr, one entry per line.
type lineLogger struct {
	log *slog.Logger
	mu  sync.Mutex
	buf []byte
}

// maxLogLine is where an unterminated stderr line is logged anyway.
const maxLogLine = 16 * 1024

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			if len(l.buf) >= maxLogLine {
				l.emit(l.buf)
				l.buf = l.buf[:0]
			}
			return len(p), nil
		}
		l.emit(l.buf[:i])
		l.buf = append(l.buf[:0], l.buf[i+1:]...)
	}
}

func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.emit(l.buf)
		l.buf = nil
	}
}

func (l *lineLogger) emit(line []byte) {
	if len(bytes.TrimSpace(line)) > 0 {
		l.log.Info("shim stderr", "line", string(line))
	}
}
