package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
)

// The WebSocket attach is Tether's own client of the v5.channel.k8s.io
// subprotocol (the API server's stream translator, Kubernetes 1.30+), so
// that an attach session costs what it needs: the session reads the
// container's stdout straight from the WebSocket frames into its decoder's
// buffer and writes its commands as frames, with small read and write
// buffers (the write buffer only while a command is written) and no
// goroutine or pipe of its own. client-go's executor holds five 32 KiB
// buffers and seven goroutines per session, for a runner's hundred jobs
// about 25 MiB of a process that otherwise needs a few. SPDY, the
// fallback, stays client-go's.

// Channels of the v5.channel.k8s.io subprotocol: every message starts with
// its channel's byte.
const (
	wsProtocolV5  = "v5.channel.k8s.io"
	wsStdin       = 0
	wsStdout      = 1
	wsStderr      = 2
	wsErrorStream = 3
)

// Buffer sizes of a WebSocket attach. Reads as big as the read buffer or
// bigger bypass it (frame payloads go straight into the session's buffer);
// a command bigger than the write buffer goes out as several messages (one
// frame each: the API server reads a message as a single frame).
const (
	wsReadBuffer  = 4 << 10
	wsWriteBuffer = 4 << 10
	// wsMaxStatus bounds the error channel's status message.
	wsMaxStatus = 64 << 10
)

// wsConn is one attach session over WebSocket. Read is called by one
// goroutine and Write by one other; Close by any.
type wsConn struct {
	ws     *gwebsocket.Conn
	stderr *lineLogger

	cur    io.Reader // the stdout message being read
	status error     // what the error channel reported
	ch     [1]byte

	closed atomic.Bool
	once   sync.Once
}

// dialWebSocket attaches at u over WebSocket with cfg's TLS, proxy and
// credentials, and returns once the session is established or an error:
// an httpstream.UpgradeFailureError when the server refuses the upgrade or
// the subprotocol (try SPDY then), the proxy's error when the dialer
// cannot use it.
//
// pd, when set, is a connection dialed before (Claim's): the upgrade goes
// over it when it is to the same server.
func dialWebSocket(ctx context.Context, cfg *rest.Config, u *url.URL, timeout time.Duration, log *slog.Logger, pd *predial) (*wsConn, error) {
	tcfg, err := cfg.TransportConfig()
	if err != nil {
		return nil, fmt.Errorf("kube transport: WebSocket configuration: %w", err)
	}
	tlsConfig, err := transport.TLSConfigFor(tcfg)
	if err != nil {
		return nil, fmt.Errorf("kube transport: WebSocket TLS configuration: %w", err)
	}
	proxy := cfg.Proxy
	if proxy == nil {
		proxy = utilnet.NewProxierWithNoProxyCIDR(http.ProxyFromEnvironment)
	}
	d := &wsDialer{dialer: gwebsocket.Dialer{
		Proxy:            proxy,
		TLSClientConfig:  tlsConfig,
		HandshakeTimeout: timeout,
		ReadBufferSize:   wsReadBuffer,
		WriteBufferSize:  wsWriteBuffer,
		WriteBufferPool:  noBufferPool{},
		Subprotocols:     []string{wsProtocolV5},
	}}
	if pd != nil {
		usePredial(&d.dialer, pd, wsTLSConfig(tlsConfig, u))
	}
	// The wrappers add what cfg says about credentials (bearer tokens,
	// exec plugins, basic auth, impersonation, the user agent) to the
	// upgrade request, as for every other request.
	rt, err := transport.HTTPWrappersForConfig(tcfg, d)
	if err != nil {
		return nil, fmt.Errorf("kube transport: WebSocket credentials: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("kube transport: attach request: %w", err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		if ctx.Err() != nil && !httpstream.IsUpgradeFailure(err) {
			return nil, fmt.Errorf("attach: streams not established within %s: %w", timeout, err)
		}
		return nil, err
	}
	if resp.Body != nil {
		_ = resp.Body.Close()
	}
	return &wsConn{ws: d.conn, stderr: &lineLogger{log: log}}, nil
}

// wsDialer is the http.RoundTripper at the end of client-go's credential
// wrappers: it dials the WebSocket with the request's URL and headers.
type wsDialer struct {
	dialer gwebsocket.Dialer
	conn   *gwebsocket.Conn
}

func (d *wsDialer) RoundTrip(req *http.Request) (*http.Response, error) {
	u := *req.URL
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	case "http":
		u.Scheme = "ws"
	default:
		return nil, fmt.Errorf("kube transport: attach URL %s: unknown scheme %q", req.URL, u.Scheme)
	}
	conn, resp, err := d.dialer.DialContext(req.Context(), u.String(), req.Header)
	if errors.Is(err, gwebsocket.ErrBadHandshake) {
		cause := err
		if resp != nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, wsMaxStatus))
			_ = resp.Body.Close()
			cause = fmt.Errorf("%w (%s): %s", err, resp.Status, strings.TrimSpace(string(body)))
		}
		return nil, &httpstream.UpgradeFailureError{Cause: cause}
	}
	if err != nil {
		return nil, fmt.Errorf("attach over WebSocket: %w", err)
	}
	if conn.Subprotocol() != wsProtocolV5 {
		_ = conn.Close()
		return nil, &httpstream.UpgradeFailureError{Cause: fmt.Errorf("the server chose subprotocol %q, not %s", conn.Subprotocol(), wsProtocolV5)}
	}
	d.conn = conn
	return resp, nil
}

// noBufferPool gives the WebSocket no write buffer between writes: each
// command allocates one (commands are few: the job, resumes, pings).
type noBufferPool struct{}

func (noBufferPool) Get() any { return nil }
func (noBufferPool) Put(any)  {}

// Read reads the container's stdout (the shim's records), straight from
// the frames; it logs stderr and keeps the error channel's status for the
// end of the stream.
func (c *wsConn) Read(p []byte) (int, error) {
	for {
		if c.cur != nil {
			n, err := c.cur.Read(p)
			if err == io.EOF {
				c.cur, err = nil, nil
			}
			if err != nil {
				return n, c.ended(err)
			}
			if n > 0 {
				return n, nil
			}
			continue
		}
		typ, r, err := c.ws.NextReader()
		if err != nil {
			return 0, c.ended(err)
		}
		if typ != gwebsocket.BinaryMessage {
			return 0, c.failed(fmt.Errorf("attach stream: unexpected message type %d", typ))
		}
		if _, err := io.ReadFull(r, c.ch[:]); err != nil {
			return 0, c.ended(err)
		}
		switch c.ch[0] {
		case wsStdout:
			c.cur = r
		case wsStderr:
			if _, err := io.CopyBuffer(c.stderr, r, make([]byte, 512)); err != nil {
				return 0, c.ended(err)
			}
		case wsErrorStream:
			b, err := io.ReadAll(io.LimitReader(r, wsMaxStatus))
			if err != nil {
				return 0, c.ended(err)
			}
			c.status = statusError(b)
		default:
			if _, err := io.CopyBuffer(io.Discard, r, make([]byte, 512)); err != nil {
				return 0, c.ended(err)
			}
		}
	}
}

// statusError returns the error the error channel's message b reports (a
// metav1.Status), nil for success.
func statusError(b []byte) error {
	var st metav1.Status
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("attach stream: %s", strings.TrimSpace(string(b)))
	}
	if st.Status == metav1.StatusSuccess {
		return nil
	}
	return fmt.Errorf("attach stream: %s", st.Message)
}

// ended maps the WebSocket's end (err from reading it) to the Conn's
// errors: after Close errConnClosed; else the failure the error channel
// reported; else io.EOF for a normal close (the container exited or the
// server ended the session) and the read error for the others.
func (c *wsConn) ended(err error) error {
	if c.closed.Load() {
		return errConnClosed
	}
	c.stderr.flush()
	if c.status != nil {
		return c.status
	}
	var ce *gwebsocket.CloseError
	if errors.As(err, &ce) && ce.Code == gwebsocket.CloseNormalClosure || errors.Is(err, io.EOF) {
		return io.EOF
	}
	return fmt.Errorf("attach stream: %w", err)
}

// failed returns err, or errConnClosed after Close.
func (c *wsConn) failed(err error) error {
	if c.closed.Load() {
		return errConnClosed
	}
	return err
}

// Write writes p to the container's stdin (commands to the shim), in
// messages that each fit one frame.
func (c *wsConn) Write(p []byte) (int, error) {
	const chunk = wsWriteBuffer - 1 // the channel byte
	n := 0
	for n < len(p) {
		if c.closed.Load() {
			return n, errConnClosed
		}
		part := p[n:min(len(p), n+chunk)]
		w, err := c.ws.NextWriter(gwebsocket.BinaryMessage)
		if err == nil {
			if _, err = w.Write([]byte{wsStdin}); err == nil {
				_, err = w.Write(part)
			}
			if cerr := w.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			if c.closed.Load() {
				return n, errConnClosed
			}
			return n, fmt.Errorf("attach stream: write stdin: %w", err)
		}
		n += len(part)
	}
	return n, nil
}

// Close ends the attach session (the shim keeps running): a normal close
// frame, then the connection.
func (c *wsConn) Close() error {
	c.once.Do(func() {
		c.closed.Store(true)
		_ = c.ws.WriteControl(gwebsocket.CloseMessage,
			gwebsocket.FormatCloseMessage(gwebsocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		_ = c.ws.Close()
	})
	return nil
}
