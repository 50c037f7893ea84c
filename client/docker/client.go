package docker

import (
	"context"
	"sync/atomic"

	"github.com/tether-ci/tether/internal/dockerengine"
)

// APIVersion is the Docker Engine API version the client speaks. Docker
// since 20.10 and Podman's compatibility service serve it.
const APIVersion = dockerengine.APIVersion

// DefaultHost is the engine address used when DOCKER_HOST is not set.
const DefaultHost = dockerengine.DefaultHost

// ErrNoEngine is wrapped by every error that means no engine answers at the
// configured address (no socket, connection refused, permission denied).
var ErrNoEngine = dockerengine.ErrNoEngine

// Ulimit is a resource limit of a job container (Spec.Ulimits).
type Ulimit = dockerengine.Ulimit

// Client starts job containers on one Docker Engine API endpoint. It is
// safe for concurrent use.
type Client struct {
	e *dockerengine.Client

	// needUlimits is set once the engine failed to apply its default
	// resource limits; later jobs use fallback limits right away.
	needUlimits atomic.Bool
}

// NewClient returns a client for the engine at host ("unix://PATH" or
// "tcp://HOST:PORT"). An empty host means the engine the docker CLI would
// use: DOCKER_HOST (TLS from DOCKER_TLS_VERIFY and DOCKER_CERT_PATH), else
// the current docker context, else DefaultHost. NewClient does not contact
// the engine; Ping does.
func NewClient(host string) (*Client, error) {
	e, err := dockerengine.NewClient(host)
	if err != nil {
		return nil, err
	}
	return &Client{e: e}, nil
}

// Host returns the engine address the client uses.
func (c *Client) Host() string { return c.e.Host() }

// Ping checks that an engine answers at the client's address.
func (c *Client) Ping(ctx context.Context) error { return c.e.Ping(ctx) }

// Close releases idle connections.
func (c *Client) Close() { c.e.Close() }
