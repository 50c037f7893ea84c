// Package faultproxy is a test-only TCP proxy on loopback that cuts the
// connections it relays: after a random number of bytes, after a random
// lifetime, or on demand. A cut resets both sides (RST, not FIN), like a
// proxy or load balancer that drops a connection, and may fall in the middle
// of a write, so the peers see a torn frame.
package faultproxy

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Options says when connections are cut. Zero values disable a rule.
type Options struct {
	// MinBytes and MaxBytes bound the random number of bytes (both
	// directions together) a connection relays before it is cut.
	// MaxBytes 0 disables cutting by bytes.
	MinBytes, MaxBytes int64
	// MinLife and MaxLife bound the random lifetime of a connection
	// before it is cut. MaxLife 0 disables cutting by time.
	MinLife, MaxLife time.Duration
	// MaxCuts stops the random cutting after this many cuts (0: no limit).
	// CutAll still works after it.
	MaxCuts int
	// Seed seeds the random choices; 0 picks a random seed.
	Seed uint64
	// Logf, when set, is told about every cut.
	Logf func(format string, args ...any)
}

// Proxy relays TCP connections from its loopback address to a target.
type Proxy struct {
	ln     net.Listener
	target string
	opts   Options

	mu    sync.Mutex
	rng   *rand.Rand
	conns map[*link]struct{}

	cutting  atomic.Bool
	blocked  atomic.Bool
	cuts     atomic.Int64
	accepted atomic.Int64
	wg       sync.WaitGroup
	closed   chan struct{}
}

// Start listens on 127.0.0.1 (a random port) and relays every connection
// to target ("host:port"). Random cutting starts enabled.
func Start(target string, opts Options) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fault proxy: listen on loopback: %w", err)
	}
	seed := opts.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	p := &Proxy{
		ln:     ln,
		target: target,
		opts:   opts,
		rng:    rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		conns:  map[*link]struct{}{},
		closed: make(chan struct{}),
	}
	p.cutting.Store(true)
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the proxy's "host:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetCutting turns the random cutting on or off. Connections opened while
// it is off are never cut at random.
func (p *Proxy) SetCutting(on bool) { p.cutting.Store(on) }

// SetBlocked makes the proxy reset every new connection at once (an
// unreachable server) until it is called with false. Open connections are
// not touched: CutAll them.
func (p *Proxy) SetBlocked(on bool) { p.blocked.Store(on) }

// Cuts returns how many connections the proxy has cut so far.
func (p *Proxy) Cuts() int { return int(p.cuts.Load()) }

// Accepted returns how many connections the proxy has accepted so far.
func (p *Proxy) Accepted() int { return int(p.accepted.Load()) }

// CutAll resets every open connection now and returns how many it cut.
func (p *Proxy) CutAll() int {
	p.mu.Lock()
	links := make([]*link, 0, len(p.conns))
	for l := range p.conns {
		links = append(links, l)
	}
	p.mu.Unlock()
	n := 0
	for _, l := range links {
		if l.cut("on demand") {
			n++
		}
	}
	return n
}

// Close stops accepting, resets every open connection and waits for the
// relay goroutines to end.
func (p *Proxy) Close() error {
	select {
	case <-p.closed:
		return nil
	default:
	}
	close(p.closed)
	err := p.ln.Close()
	p.CutAll()
	p.wg.Wait()
	return err
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		p.wg.Add(1)
		go p.serve(c)
	}
}

// budget picks the cut point of a new connection.
func (p *Proxy) budget() (bytes int64, life time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	bytes, life = -1, 0
	if !p.cutting.Load() || (p.opts.MaxCuts > 0 && int(p.cuts.Load()) >= p.opts.MaxCuts) {
		return bytes, life
	}
	if p.opts.MaxBytes > 0 {
		bytes = p.opts.MinBytes
		if span := p.opts.MaxBytes - p.opts.MinBytes; span > 0 {
			bytes += p.rng.Int64N(span + 1)
		}
	}
	if p.opts.MaxLife > 0 {
		life = p.opts.MinLife
		if span := p.opts.MaxLife - p.opts.MinLife; span > 0 {
			life += time.Duration(p.rng.Int64N(int64(span) + 1))
		}
	}
	return bytes, life
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	if p.blocked.Load() {
		reset(client)
		return
	}
	server, err := net.DialTimeout("tcp", p.target, 10*time.Second)
	if err != nil {
		p.logf("fault proxy: dial %s: %v", p.target, err)
		reset(client)
		return
	}
	bytes, life := p.budget()
	l := &link{p: p, client: client, server: server}
	l.left.Store(bytes)
	p.mu.Lock()
	p.conns[l] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, l)
		p.mu.Unlock()
	}()
	if life > 0 {
		t := time.AfterFunc(life, func() { l.cut(fmt.Sprintf("after %v", life)) })
		defer t.Stop()
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); l.pipe(server, client) }()
	go func() { defer wg.Done(); l.pipe(client, server) }()
	wg.Wait()
}

func (p *Proxy) logf(format string, args ...any) {
	if p.opts.Logf != nil {
		p.opts.Logf(format, args...)
	}
}

// link is one relayed connection.
type link struct {
	p              *Proxy
	client, server net.Conn
	left           atomic.Int64 // bytes before the cut; negative: no byte limit
	once           sync.Once
	wasCut         atomic.Bool
	halfClosed     atomic.Int32
}

// take reserves up to n bytes of the budget and reports how many may pass
// and whether the connection must be cut after them.
func (l *link) take(n int) (int, bool) {
	for {
		left := l.left.Load()
		if left < 0 {
			return n, false
		}
		if int64(n) < left {
			if l.left.CompareAndSwap(left, left-int64(n)) {
				return n, false
			}
			continue
		}
		if l.left.CompareAndSwap(left, 0) {
			return int(left), true
		}
	}
}

func (l *link) pipe(dst, src net.Conn) {
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			pass, cut := l.take(n)
			if pass > 0 {
				if _, werr := dst.Write(buf[:pass]); werr != nil {
					l.closeBoth()
					return
				}
			}
			if cut {
				l.cut("after its byte budget")
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) && !l.wasCut.Load() {
				// Pass the half-close on; end both once both sides closed.
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
				if l.halfClosed.Add(1) == 2 {
					l.closeBoth()
				}
				return
			}
			l.closeBoth()
			return
		}
	}
}

// cut resets both sides once and reports whether this call did it.
func (l *link) cut(why string) bool {
	did := false
	l.once.Do(func() {
		did = true
		l.wasCut.Store(true)
		n := l.p.cuts.Add(1)
		l.p.logf("fault proxy: cut #%d %s", n, why)
		reset(l.client)
		reset(l.server)
	})
	return did
}

func (l *link) closeBoth() {
	l.once.Do(func() {
		_ = l.client.Close()
		_ = l.server.Close()
	})
}

// reset closes c with an RST instead of a FIN.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
