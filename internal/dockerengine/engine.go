// Package dockerengine is the small Docker Engine API client (API version
// 1.41, net/http, no SDK) the docker backend uses: containers, archives,
// attach and exec, images. It is internal: the public client/docker package
// offers what a runner needs.
package dockerengine

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
)

// APIVersion is the Docker Engine API version the client speaks. Docker
// since 20.10 and Podman's compatibility service serve it.
const APIVersion = "1.41"

// DefaultHost is the engine address used when DOCKER_HOST is not set.
const DefaultHost = "unix:///var/run/docker.sock"

// ErrNoEngine is wrapped by every error that means no engine answers at the
// configured address (no socket, connection refused, permission denied).
var ErrNoEngine = errors.New("no Docker Engine API")

// Client is a minimal Docker Engine API client over a unix socket or TCP
// (optionally TLS). It is safe for concurrent use.
type Client struct {
	ep      Endpoint
	network string // "unix" or "tcp"
	addr    string // socket path or host:port
	http    *http.Client
}

// NewClient returns a client for the engine at host ("unix://PATH" or
// "tcp://HOST:PORT"). An empty host is resolved the way the docker CLI does
// (see ResolveEndpoint). NewClient does not contact the engine; Ping does.
func NewClient(host string) (*Client, error) {
	ep, err := ResolveEndpoint(host, os.Getenv)
	if err != nil {
		return nil, err
	}
	return NewClientFor(ep)
}

// NewClientFor returns a client for the endpoint ep.
func NewClientFor(ep Endpoint) (*Client, error) {
	network, addr, err := dialAddress(ep.Host)
	if err != nil {
		return nil, fmt.Errorf("%w (from %s)", err, ep.From)
	}
	if ep.TLS != nil && network != "tcp" {
		ep.TLS = nil // TLS applies to TCP endpoints only
	}
	if ep.TLS != nil && ep.TLS.ServerName == "" {
		host, _, _ := net.SplitHostPort(addr)
		ep.TLS = ep.TLS.Clone()
		ep.TLS.ServerName = host
	}
	c := &Client{ep: ep, network: network, addr: addr}
	c.http = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return c.dial(ctx)
		},
		MaxIdleConns:    4,
		IdleConnTimeout: 0,
	}}
	return c, nil
}

// Host returns the engine address the client uses.
func (c *Client) Host() string { return c.ep.Host }

// Close releases idle connections.
func (c *Client) Close() {
	c.http.CloseIdleConnections()
}

// dial opens a connection to the engine (TLS-secured when configured); a
// missing or refusing engine becomes an error wrapping ErrNoEngine that
// says what to do.
func (c *Client) dial(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, c.network, c.addr)
	if err == nil && c.ep.TLS != nil {
		tc := tls.Client(conn, c.ep.TLS)
		if err = tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("TLS handshake with the engine at %s (from %s): %w", c.ep.Host, c.ep.From, err)
		}
		return tc, nil
	}
	if err == nil {
		return conn, nil
	}
	switch {
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ENOTSOCK):
		return nil, fmt.Errorf("%w at %s (%w): install and start docker, or `apt-get install podman` and run "+
			"`podman system service --time=0 unix:///run/podman/podman.sock` and set DOCKER_HOST=unix:///run/podman/podman.sock",
			ErrNoEngine, c.ep.Host, err)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return nil, fmt.Errorf("%w at %s (%w): this user may not use the socket; join the group that owns it (usually docker) or use a socket you own",
			ErrNoEngine, c.ep.Host, err)
	}
	return nil, fmt.Errorf("connect to the engine at %s: %w", c.ep.Host, err)
}

// APIError is an error answer of the engine.
type APIError struct {
	// Method and Path describe the request.
	Method, Path string
	// StatusCode is the HTTP status.
	StatusCode int
	// Message is the engine's message.
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("docker engine: %s %s: %d %s: %s", e.Method, e.Path, e.StatusCode, http.StatusText(e.StatusCode), e.Message)
}

// IsNotFound reports whether err is an engine answer 404 (no such
// container or image).
func IsNotFound(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.StatusCode == http.StatusNotFound
}

// url returns the request URL for an API path such as "/containers/create".
func (c *Client) url(path string, query url.Values) string {
	u := "http://docker/v" + APIVersion + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	return u
}

// do sends a request and returns the response for a 2xx status; any other
// status becomes an *APIError. The caller closes the body.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, contentType string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.url(path, query), body)
	if err != nil {
		return nil, fmt.Errorf("docker engine: build request %s %s: %w", method, path, err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(err, ErrNoEngine) {
			return nil, unwrapURLError(err)
		}
		return nil, fmt.Errorf("docker engine at %s: %s %s: %w", c.ep.Host, method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, readAPIError(resp, method, path)
	}
	return resp, nil
}

// unwrapURLError drops net/http's *url.Error wrapper ("Post \"http://docker…\":")
// so the engine error reads cleanly.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// readAPIError turns an error response into an *APIError.
func readAPIError(resp *http.Response, method, path string) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var m struct {
		Message string `json:"message"`
	}
	msg := strings.TrimSpace(string(b))
	if json.Unmarshal(b, &m) == nil && m.Message != "" {
		msg = m.Message
	}
	return &APIError{Method: method, Path: path, StatusCode: resp.StatusCode, Message: msg}
}

// doJSON sends in (if non-nil) as JSON and decodes the answer into out (if
// non-nil).
func (c *Client) doJSON(ctx context.Context, method, path string, query url.Values, in, out any) error {
	var body io.Reader
	ct := ""
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("docker engine: encode %s %s: %w", method, path, err)
		}
		body, ct = bytes.NewReader(b), "application/json"
	}
	resp, err := c.do(ctx, method, path, query, ct, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("docker engine: decode the answer to %s %s: %w", method, path, err)
	}
	return nil
}

// Ping checks that an engine answers at the client's address.
func (c *Client) Ping(ctx context.Context) error {
	resp, err := c.do(ctx, http.MethodGet, "/_ping", nil, "", nil)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}
