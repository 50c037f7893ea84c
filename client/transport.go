package client

import (
	"context"
	"io"
)

// Transport reaches one running tether-shim. Backends implement it: the local
// backend (the shim as a child process), Kubernetes attach, docker/podman
// attach. A Session calls Connect once at the start and again after every
// broken connection; the shim keeps running in between.
type Transport interface {
	// Connect opens a new connection to the shim. Reading the connection
	// yields the shim's stdout from about now on (possibly starting in the
	// middle of a record); writing it feeds the shim's stdin. Connect
	// returns an error wrapping ErrShimGone when the shim can no longer be
	// reached at all (its process or container ended), which stops the
	// session's reconnect attempts.
	Connect(ctx context.Context) (Conn, error)
}

// Conn is one connection to a shim.
type Conn interface {
	// Read reads the shim's stdout. io.EOF or any error means this
	// connection is finished, not necessarily the shim.
	io.Reader
	// Write writes to the shim's stdin.
	io.Writer
	// Close ends the connection without stopping the shim. It must make a
	// Read or Write in progress return (the session closes a stalled
	// connection from another goroutine), and it may be called more than
	// once.
	Close() error
}
