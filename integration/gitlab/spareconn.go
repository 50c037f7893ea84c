package gitlab

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether-ci/tether/client"
)

// spareWait bounds the opening of a spare attach.
const spareWait = 30 * time.Second

// spareReadSize is the size of a kept connection's reads.
const spareReadSize = 32 << 10

// spareConn is an attach the stage agent keeps: one goroutine reads it
// for its whole life and hands what it reads to the stage that holds it
// (a lease), or drops it while no stage does (a session ignores
// everything before its resume answer). It notices the end of the
// stream while no stage holds it.
type spareConn struct {
	conn client.Conn
	// ended is called when the stream ends while no stage holds it and
	// the agent did not close it itself.
	ended func()
	held  atomic.Pointer[spareLease]
	// wmu is held by a write to the connection.
	wmu sync.Mutex
	// done is closed when the stream ended; err says why.
	done      chan struct{}
	err       error
	closed    atomic.Bool
	closeOnce sync.Once
	// end is the offset after the last record of the stage that released
	// the connection (valid with ended set); idle counts the bytes read
	// since, which no stage took: while it is 0, nothing was written to
	// the shim's stream after that record, so end is still its end.
	end   atomic.Int64
	known atomic.Bool
	idle  atomic.Int64
}

func newSpareConn(conn client.Conn, ended func()) *spareConn {
	c := &spareConn{conn: conn, ended: ended, done: make(chan struct{})}
	go c.pump()
	return c
}

// pump reads the stream for its whole life, into one buffer: a stage
// gets a copy of what each read returned (a stage's records are a few
// hundred bytes; a new buffer of spareReadSize for each read was most of
// the agent's allocation per stage).
func (c *spareConn) pump() {
	buf := make([]byte, spareReadSize)
	for {
		n, err := c.conn.Read(buf)
		// The holder is read after the read returned: a stage that took
		// the connection later sent its resume later, so what this read
		// holds is before its answer and may be dropped.
		if l := c.held.Load(); n > 0 && l != nil {
			select {
			case l.chunks <- bytes.Clone(buf[:n]):
			case <-l.released:
				c.idle.Add(int64(n))
			}
		} else if n > 0 {
			c.idle.Add(int64(n))
		}
		if err != nil {
			c.err = err
			close(c.done)
			if c.held.Load() == nil && !c.closed.Load() {
				c.ended()
			}
			return
		}
	}
}

// open reports whether the stream has not ended.
func (c *spareConn) open() bool {
	select {
	case <-c.done:
		return false
	default:
		return !c.closed.Load()
	}
}

// close ends the connection.
func (c *spareConn) close() {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		_ = c.conn.Close()
	})
}

// lease hands the connection to a stage, unless its stream ended.
func (c *spareConn) lease() *spareLease {
	if !c.open() {
		return nil
	}
	l := &spareLease{c: c, chunks: make(chan []byte), released: make(chan struct{})}
	c.known.Store(false)
	c.held.Store(l)
	return l
}

// streamEnd is the end of the shim's stream, when the stage that
// released the connection knew it and no byte came since.
func (c *spareConn) streamEnd() (int64, bool) {
	if !c.known.Load() || c.idle.Load() != 0 {
		return 0, false
	}
	return c.end.Load(), true
}

// noteEnd records end, the offset after the last record of the stage that
// just released the connection, and counts the bytes read from now on.
func (c *spareConn) noteEnd(end int64) {
	c.idle.Store(0)
	c.end.Store(end)
	c.known.Store(true)
}

// spareLease is a kept connection as one stage's session uses it: its
// Close releases the connection (no read or write of the session
// reaches it any more) without ending it; the agent keeps or closes it
// after the stage (spareSet.put).
type spareLease struct {
	c        *spareConn
	chunks   chan []byte
	released chan struct{}
	once     sync.Once
	rest     []byte
}

func (l *spareLease) Read(p []byte) (int, error) {
	if len(l.rest) == 0 {
		select {
		case b := <-l.chunks:
			l.rest = b
		case <-l.released:
			return 0, net.ErrClosed
		case <-l.c.done:
			// Everything read before the end was handed over already.
			return 0, l.c.err
		}
	}
	n := copy(p, l.rest)
	l.rest = l.rest[n:]
	return n, nil
}

func (l *spareLease) Write(p []byte) (int, error) {
	l.c.wmu.Lock()
	defer l.c.wmu.Unlock()
	select {
	case <-l.released:
		return 0, net.ErrClosed
	default:
	}
	return l.c.conn.Write(p)
}

// Close releases the connection. A write in flight (one the connection
// may never finish: a stalled connection is closed this way) ends the
// connection instead, so that the write returns.
func (l *spareLease) Close() error {
	l.once.Do(func() {
		close(l.released)
		l.c.held.CompareAndSwap(l, nil)
		if !l.c.wmu.TryLock() {
			l.c.close()
			return
		}
		l.c.wmu.Unlock()
	})
	return nil
}
