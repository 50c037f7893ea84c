package kube

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
)

// predialAge bounds how long a pre-dialed connection waits for its
// attach: an API server closes a connection that sends no request for
// long, and a connection that old gains the attach little anyway.
const predialAge = 10 * time.Second

// predial is the network connection of a WebSocket attach dialed before
// the attach knows its pod (TCP, and TLS for an https API server), so
// that the attach's upgrade skips those handshakes: Claim starts one
// before it lists the pool's pods, and the attach to the pod it claims
// takes it. A WebSocket upgrade cannot share the HTTP/2 connection of the
// API requests, so an attach always needs a connection of its own. Only
// one attach takes it; one never taken is closed by release.
type predial struct {
	network, addr string
	tls           bool

	done chan struct{} // closed once conn or err is set
	conn net.Conn
	err  error
	at   time.Time // when the dial finished

	mu    sync.Mutex
	taken bool
}

// startPredial dials the API server of cfg in the background for the
// WebSocket attach of a Transport that takes it; nil when that attach
// could not use it: a proxy applies to the server, cfg dials its own way
// (Dial or Transport set), or its TLS settings cannot be read (the attach
// then reports why).
func startPredial(ctx context.Context, cfg *rest.Config) *predial {
	if cfg == nil || cfg.Dial != nil || cfg.Transport != nil {
		return nil
	}
	u, err := url.Parse(cfg.Host)
	if err != nil || u.Host == "" || u.Scheme != "https" && u.Scheme != "http" {
		return nil
	}
	if proxied(cfg, u) {
		return nil
	}
	var tlsConfig *tls.Config
	if u.Scheme == "https" {
		tcfg, err := cfg.TransportConfig()
		if err != nil {
			return nil
		}
		if tlsConfig, err = transport.TLSConfigFor(tcfg); err != nil {
			return nil
		}
		tlsConfig = wsTLSConfig(tlsConfig, u)
	}
	p := &predial{network: "tcp", addr: hostPort(u), tls: tlsConfig != nil, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		d := &net.Dialer{Timeout: DefaultConnectTimeout}
		if tlsConfig != nil {
			p.conn, p.err = (&tls.Dialer{NetDialer: d, Config: tlsConfig}).DialContext(ctx, p.network, p.addr)
		} else {
			p.conn, p.err = d.DialContext(ctx, p.network, p.addr)
		}
		p.at = time.Now()
	}()
	return p
}

// take returns the pre-dialed connection for an attach dialing addr over
// TLS (withTLS) or not, once the dial finished (or ctx ended): nil when
// it failed, is too old, is for another address, or was taken before.
func (p *predial) take(ctx context.Context, network, addr string, withTLS bool) net.Conn {
	if p == nil || network != p.network || addr != p.addr || withTLS != p.tls {
		return nil
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.taken || p.err != nil {
		return nil
	}
	p.taken = true
	if time.Since(p.at) > predialAge {
		_ = p.conn.Close()
		return nil
	}
	return p.conn
}

// release closes the connection unless an attach took it (now or once
// its dial finished).
func (p *predial) release() { p.releaseAfter(nil) }

// releaseAfter is release once attached is closed (the attach that could
// take the connection returned): nil, at once.
func (p *predial) releaseAfter(attached <-chan struct{}) {
	if p == nil {
		return
	}
	go func() {
		if attached != nil {
			<-attached
		}
		<-p.done
		p.mu.Lock()
		defer p.mu.Unlock()
		if !p.taken && p.err == nil {
			_ = p.conn.Close()
		}
		p.taken = true
	}()
}

// usePredial makes d dial through pd: the pre-dialed connection when it
// fits, else a new one (over TLS with tlsConfig for an https server).
func usePredial(d *gwebsocket.Dialer, pd *predial, tlsConfig *tls.Config) {
	dialer := &net.Dialer{}
	d.NetDialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if c := pd.take(ctx, network, addr, false); c != nil {
			return c, nil
		}
		return dialer.DialContext(ctx, network, addr)
	}
	d.NetDialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if c := pd.take(ctx, network, addr, true); c != nil {
			return c, nil
		}
		return (&tls.Dialer{NetDialer: dialer, Config: tlsConfig}).DialContext(ctx, network, addr)
	}
}

// proxied reports whether the WebSocket attach to u goes through a proxy
// (cfg's, else the environment's, as dialWebSocket chooses it).
func proxied(cfg *rest.Config, u *url.URL) bool {
	proxy := cfg.Proxy
	if proxy == nil {
		proxy = utilnet.NewProxierWithNoProxyCIDR(http.ProxyFromEnvironment)
	}
	req := &http.Request{URL: u, Header: http.Header{}}
	p, err := proxy(req)
	return err != nil || p != nil
}

// wsTLSConfig is cfg as a WebSocket attach's TLS handshake uses it: the
// server's name set (the host, when cfg names none) and HTTP/1.1, which
// the upgrade needs, as the only application protocol offered.
func wsTLSConfig(cfg *tls.Config, u *url.URL) *tls.Config {
	if cfg == nil {
		cfg = &tls.Config{}
	} else {
		cfg = cfg.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = u.Hostname()
	}
	cfg.NextProtos = []string{"http/1.1"}
	return cfg
}

// hostPort is u's host with the scheme's port when it names none.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}
