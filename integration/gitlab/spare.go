package gitlab

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
)

// spareWait bounds the opening of a spare attach.
const spareWait = 30 * time.Second

// spareSet is the stage agent's spare attaches: after a stage, the agent
// attaches to that stage's container again at once and keeps the
// connection, so the job's next stage in that container skips the attach
// (a new connection through the API server and the kubelet to the
// container runtime: most of a stage's time). A session reads nothing
// before its resume answer, so a connection opened early serves exactly
// as a new one; one that broke meanwhile is dropped, and the stage
// attaches itself.
type spareSet struct {
	ctx context.Context
	log *slog.Logger
	// ended is called when a spare's stream ends while nobody uses it:
	// the shim (or its pod) may be gone.
	ended func()
	mu    sync.Mutex
	conns map[string]*spareConn // by namespace/pod/container
}

func newSpareSet(ctx context.Context, log *slog.Logger, ended func()) *spareSet {
	return &spareSet{ctx: ctx, log: log, ended: ended, conns: map[string]*spareConn{}}
}

// take returns the spare attach of key, if one is open.
func (s *spareSet) take(key string) client.Conn {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	c := s.conns[key]
	delete(s.conns, key)
	s.mu.Unlock()
	if c == nil || !c.claim() {
		return nil
	}
	return c
}

// refill opens a spare attach of key through t, in the background.
func (s *spareSet) refill(key string, t *kube.Transport) {
	if s == nil || s.ctx.Err() != nil {
		return
	}
	t.Options.AttachFirst = true
	t.Options.Logger = s.log
	go func() {
		ctx, cancel := context.WithTimeout(s.ctx, spareWait)
		defer cancel()
		conn, err := t.Connect(ctx)
		if err != nil {
			s.log.Debug("no spare attach", "container", key, "err", err)
			return
		}
		c := newSpareConn(conn, func() {
			s.mu.Lock()
			mine := s.conns[key]
			if mine != nil && !mine.claimed.Load() {
				delete(s.conns, key)
			}
			s.mu.Unlock()
			if mine != nil {
				s.ended()
			}
		})
		s.mu.Lock()
		old := s.conns[key]
		s.conns[key] = c
		s.mu.Unlock()
		if old != nil {
			_ = old.Close()
		}
		if s.ctx.Err() != nil {
			_ = c.Close()
		}
	}()
}

// closeAll closes every spare attach.
func (s *spareSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, c := range s.conns {
		_ = c.Close()
		delete(s.conns, k)
	}
}

// spareConn is an attach kept for a later stage: until claimed, what the
// shim writes is dropped (a session ignores everything before its resume
// answer) and the end of the stream is noticed.
type spareConn struct {
	conn    client.Conn
	claimed atomic.Bool
	dead    atomic.Bool
	chunks  chan []byte
	rest    []byte
	done    chan struct{}
	once    sync.Once
	// err is why the stream ended.
	err atomic.Pointer[error]
}

func newSpareConn(conn client.Conn, ended func()) *spareConn {
	c := &spareConn{conn: conn, chunks: make(chan []byte), done: make(chan struct{})}
	go c.read(ended)
	return c
}

// read reads the stream for its whole life.
func (c *spareConn) read(ended func()) {
	for {
		buf := make([]byte, 32<<10)
		n, err := c.conn.Read(buf)
		if n > 0 && c.claimed.Load() {
			select {
			case c.chunks <- buf[:n]:
			case <-c.done:
				return
			}
		}
		if err != nil {
			c.err.Store(&err)
			c.dead.Store(true)
			if !c.claimed.Load() {
				ended()
			}
			c.once.Do(func() { close(c.done) })
			return
		}
	}
}

// claim hands the connection to a stage, unless its stream ended.
func (c *spareConn) claim() bool {
	c.claimed.Store(true)
	if c.dead.Load() {
		_ = c.Close()
		return false
	}
	return true
}

func (c *spareConn) Read(p []byte) (int, error) {
	if len(c.rest) == 0 {
		select {
		case b := <-c.chunks:
			c.rest = b
		case <-c.done:
			// Chunks read before the end were handed over already.
			if err := c.err.Load(); err != nil {
				return 0, *err
			}
			return 0, io.EOF
		}
	}
	n := copy(p, c.rest)
	c.rest = c.rest[n:]
	return n, nil
}

func (c *spareConn) Write(p []byte) (int, error) { return c.conn.Write(p) }

func (c *spareConn) Close() error {
	c.once.Do(func() { close(c.done) })
	err := c.conn.Close()
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
