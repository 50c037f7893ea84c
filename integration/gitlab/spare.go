package gitlab

import (
	"context"
	"log/slog"
	"sync"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
)

// spareSet is the stage agent's attaches to the job's containers, kept
// between stages: a stage ends with its connection still open (the job's
// record came over it), and the job's next stage in that container
// begins on it instead of attaching again (a new connection through the
// API server and the kubelet to the container runtime, most of a
// stage's time, and CPU that the stage's own work waits for). A session
// reads nothing before its resume answer, so a connection that was
// already open serves exactly as a new one. One whose stream ended
// meanwhile is dropped, and the stage attaches itself; after a stage
// whose connection failed, the agent attaches again in the background
// for the next one (refill).
type spareSet struct {
	ctx context.Context
	log *slog.Logger
	// ended is called when a kept connection's stream ends while no
	// stage holds it: the shim (or its pod) may be gone.
	ended   func()
	mu      sync.Mutex
	conns   map[string]*spareConn    // by namespace/pod/container
	opening map[string]chan struct{} // refills in flight, closed when done
}

func newSpareSet(ctx context.Context, log *slog.Logger, ended func()) *spareSet {
	return &spareSet{ctx: ctx, log: log, ended: ended, conns: map[string]*spareConn{}, opening: map[string]chan struct{}{}}
}

// take returns the kept connection to the container key, held for one
// stage, or nil when there is none whose stream is open. When an attach
// to it is being opened, take waits for it (it is further along than a
// new one would be), as long as ctx lets it. known says whether end is
// the end of the shim's stream: the previous stage on this connection
// ended its session there, and nothing came over it since (the next
// stage need not ask the shim where its stream ends).
func (s *spareSet) take(ctx context.Context, key string) (conn client.Conn, end int64, known bool) {
	if s == nil {
		return nil, 0, false
	}
	s.mu.Lock()
	if wait := s.opening[key]; wait != nil && s.conns[key] == nil {
		s.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, 0, false
		}
		s.mu.Lock()
	}
	c := s.conns[key]
	delete(s.conns, key)
	s.mu.Unlock()
	if c == nil {
		return nil, 0, false
	}
	end, known = c.streamEnd()
	l := c.lease()
	if l == nil {
		c.close()
		return nil, 0, false
	}
	return l, end, known
}

// adopt makes conn, which a stage of container key opened itself, a
// connection the set can keep after the stage (put). Without a set
// (`tether gitlab run`) conn is returned as it is.
func (s *spareSet) adopt(key string, conn client.Conn) client.Conn {
	if s == nil {
		return conn
	}
	if l := s.newConn(key, conn).lease(); l != nil {
		return l
	}
	return conn
}

// put ends a stage of container key whose last connection was conn: the
// connection is kept for the container's next stage when reuse is set
// (the stage's job ended over it, its session at stream offset end) and
// its stream is still open; else it is closed and, when refill is set, a
// new attach (through transport) is opened in the background for the next
// stage.
func (s *spareSet) put(key string, conn client.Conn, reuse bool, end int64, refill bool, transport func() *kube.Transport) {
	if s == nil {
		return
	}
	if l, ok := conn.(*spareLease); ok {
		_ = l.Close()
		if reuse && l.c.open() && s.ctx.Err() == nil {
			l.c.noteEnd(end)
			s.store(key, l.c)
			return
		}
		l.c.close()
	}
	if refill {
		s.refill(key, transport())
	}
}

// store keeps c as the connection to container key.
func (s *spareSet) store(key string, c *spareConn) {
	s.mu.Lock()
	old := s.conns[key]
	s.conns[key] = c
	s.mu.Unlock()
	if old != nil && old != c {
		old.close()
	}
	if s.ctx.Err() != nil {
		c.close()
	}
}

// newConn wraps conn, a connection to container key, for keeping.
func (s *spareSet) newConn(key string, conn client.Conn) *spareConn {
	var c *spareConn
	c = newSpareConn(conn, func() {
		s.mu.Lock()
		kept := s.conns[key] == c
		if kept {
			delete(s.conns, key)
		}
		s.mu.Unlock()
		if kept {
			s.ended()
		}
	})
	return c
}

// refill opens an attach to container key through t, in the background.
func (s *spareSet) refill(key string, t *kube.Transport) {
	if s.ctx.Err() != nil {
		return
	}
	s.mu.Lock()
	if s.opening[key] != nil {
		s.mu.Unlock()
		return
	}
	done := make(chan struct{})
	s.opening[key] = done
	s.mu.Unlock()
	t.Options.AttachFirst = true
	t.Options.Logger = s.log
	go func() {
		defer func() {
			s.mu.Lock()
			delete(s.opening, key)
			s.mu.Unlock()
			close(done)
		}()
		ctx, cancel := context.WithTimeout(s.ctx, spareWait)
		defer cancel()
		conn, err := t.Connect(ctx)
		if err != nil {
			s.log.Debug("no spare attach", "container", key, "err", err)
			return
		}
		s.store(key, s.newConn(key, conn))
	}()
}

// closeAll closes every kept connection.
func (s *spareSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, c := range s.conns {
		c.close()
		delete(s.conns, k)
	}
}
