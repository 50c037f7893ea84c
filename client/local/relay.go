package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/tether-ci/tether/client"
)

// relay hands the shim's stdout to the attached connection, which reads
// it directly (no copy, no hand-off between goroutines), or to a discarding
// reader while none is attached, as a real attach drops what is written
// while nobody is connected (unless keep is set: then the output waits in
// the pipe for the next connection, until Close). One reader at a time holds readTurn; a reader
// that must stop (its connection was cut, or one was attached while the
// discarding reader read) is woken by a read deadline in the past. A
// connection waiting for its turn gives up as soon as it is shut: the
// discarding reader may hold the turn for as long as the shim is silent.
type relay struct {
	out  *os.File      // the shim's stdout, read end (pollable)
	in   io.Reader     // reads out (newNonblockingReader)
	done chan struct{} // closed once out reached its end

	readTurn chan struct{} // holds a token while someone reads out

	mu      sync.Mutex
	changed *sync.Cond // signalled when cur, gone or keep changes
	cur     *conn      // the attached connection, or nil
	gone    bool       // out reached its end
	keep    bool       // output waits for the next connection instead of being dropped
}

func (r *relay) init(out *os.File, done chan struct{}, keep bool) {
	r.out, r.done, r.keep = out, done, keep
	r.in = newNonblockingReader(out)
	r.changed = sync.NewCond(&r.mu)
	r.readTurn = make(chan struct{}, 1)
}

// wake interrupts the read in progress, if any.
func (r *relay) wake() { _ = r.out.SetReadDeadline(time.Unix(1, 0)) }

// setGone records that the shim's stdout ended.
func (r *relay) setGone() {
	r.mu.Lock()
	if !r.gone {
		r.gone = true
		close(r.done)
		r.changed.Broadcast()
	}
	r.mu.Unlock()
}

// keepsOutput reports whether output waits for the next connection.
func (r *relay) keepsOutput() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.keep
}

// stopKeeping makes the discarding reader drop the output while no
// connection is attached, whatever keep said: nobody will read it.
func (r *relay) stopKeeping() {
	r.mu.Lock()
	r.keep = false
	r.changed.Broadcast()
	r.mu.Unlock()
}

// discard reads and drops the shim's output while no connection is
// attached (and keep is not set), until the output ends.
func (r *relay) discard() {
	defer r.out.Close()
	buf := make([]byte, 64<<10)
	for {
		r.mu.Lock()
		for (r.cur != nil || r.keep) && !r.gone {
			r.changed.Wait()
		}
		gone := r.gone
		r.mu.Unlock()
		if gone {
			return
		}
		r.readTurn <- struct{}{}
		// Clear a stale deadline before checking who may read: a
		// Connect after the check sets a new one and interrupts the read.
		_ = r.out.SetReadDeadline(time.Time{})
		r.mu.Lock()
		attached := r.cur != nil || r.keep
		r.mu.Unlock()
		var err error
		if !attached {
			_, err = r.out.Read(buf)
		}
		<-r.readTurn
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			r.setGone()
			return
		}
	}
}

// Connect attaches a new connection to the shim, cutting the current one
// if there is one. It fails with an error wrapping client.ErrShimGone once
// the shim's stdout has ended.
func (s *Shim) Connect(ctx context.Context) (client.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("connect to local shim: %w", err)
	}
	c := &conn{s: s, shutC: make(chan struct{}), wrote: make(chan struct{})}
	s.mu.Lock()
	if s.gone {
		s.mu.Unlock()
		return nil, fmt.Errorf("connect to local shim (pid %d): its output ended: %w", s.cmd.Process.Pid, client.ErrShimGone)
	}
	old := s.cur
	s.cur = c
	s.changed.Broadcast()
	s.mu.Unlock()
	if old != nil {
		old.shut(errCut)
	} else {
		s.wake() // the discarding reader stops
	}
	return c, nil
}

// Cut breaks the current connection, as a network failure would: its Read
// fails and the shim keeps running. Output the shim writes before the next
// Connect is not delivered to anyone (with Config.MemoryReplay it waits in
// the pipe, ahead of the next connection's resume answer).
func (s *Shim) Cut() {
	s.detach(nil, errCut)
}

// detach shuts c (the current connection when c is nil) with err and lets
// the discarding reader take over if it was the attached one.
func (s *Shim) detach(c *conn, err error) {
	s.mu.Lock()
	if c == nil {
		c = s.cur
	}
	if c != nil && s.cur == c {
		s.cur = nil
		s.changed.Broadcast()
	}
	s.mu.Unlock()
	if c != nil {
		c.shut(err)
	}
}

// conn is one connection: reads come straight from the shim's stdout,
// writes go to its stdin.
type conn struct {
	s *Shim

	mu    sync.Mutex
	err   error         // set once the connection is shut
	shutC chan struct{} // closed when err is set

	wrote     chan struct{} // closed by the first Write
	wroteOnce sync.Once
}

func (c *conn) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *conn) Read(p []byte) (int, error) {
	r := &c.s.relay
	if c.s.keepsOutput() {
		// The output kept for this connection is read only once its
		// first command (the session's resume) is on its way: the shim
		// cannot answer it while blocked on a full pipe, and until it
		// answers, what this connection reads is dropped by the session
		// while the shim runs further ahead of the replay window.
		select {
		case <-c.wrote:
		case <-c.shutC:
			return 0, c.failed()
		}
	}
	for {
		if err := c.failed(); err != nil {
			return 0, err
		}
		select {
		case r.readTurn <- struct{}{}:
		case <-c.shutC:
			return 0, c.failed()
		}
		// Clear a stale deadline, then check: a shut after the check sets
		// a new one and interrupts the read.
		_ = r.out.SetReadDeadline(time.Time{})
		if err := c.failed(); err != nil {
			<-r.readTurn
			return 0, err
		}
		n, err := r.in.Read(p)
		<-r.readTurn
		switch {
		case n > 0:
			return n, nil
		case errors.Is(err, os.ErrDeadlineExceeded):
			continue // shut (checked above), or a stale wake-up
		case err != nil:
			r.setGone()
			return 0, err // io.EOF after the last bytes
		}
	}
}

func (c *conn) Write(p []byte) (int, error) {
	if err := c.failed(); err != nil {
		return 0, err
	}
	c.s.stdinMu.Lock()
	defer c.s.stdinMu.Unlock()
	n, err := c.s.stdin.Write(p)
	c.wroteOnce.Do(func() { close(c.wrote) })
	if err != nil {
		return n, fmt.Errorf("write to local shim stdin: %w", err)
	}
	return n, nil
}

// Close detaches the connection; the shim keeps running.
func (c *conn) Close() error {
	c.s.detach(c, errConnClosed)
	return nil
}

// shut makes reads and writes fail with err and interrupts a read in
// progress.
func (c *conn) shut(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
		close(c.shutC)
	}
	c.mu.Unlock()
	c.s.wake()
}
