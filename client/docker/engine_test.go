package docker_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/client/docker"
)

// TestNoEngine: no socket, or a socket nobody listens on, gives an error
// wrapping ErrNoEngine that names the address and what to install or start.
func TestNoEngine(t *testing.T) {
	dir := t.TempDir()
	refused := filepath.Join(dir, "refused.sock")
	ln, err := net.Listen("unix", refused)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // the socket file stays; connecting is refused

	for name, sock := range map[string]string{"missing": filepath.Join(dir, "missing.sock"), "refused": refused} {
		t.Run(name, func(t *testing.T) {
			host := "unix://" + sock
			c, err := docker.NewClient(host)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = c.Ping(ctx)
			if !errors.Is(err, docker.ErrNoEngine) {
				t.Fatalf("Ping: %v, want ErrNoEngine", err)
			}
			for _, want := range []string{host, "install", "docker", "apt-get install podman", "podman system service", "DOCKER_HOST"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			// Every call says the same, not only Ping.
			if _, err := c.StartJob(ctx, docker.Spec{Image: "x"}); !errors.Is(err, docker.ErrNoEngine) {
				t.Errorf("StartJob: %v, want ErrNoEngine", err)
			}
		})
	}
}

// TestHostSelection: DOCKER_HOST picks the engine, the default is
// /var/run/docker.sock, and unsupported addresses are refused with advice.
func TestHostSelection(t *testing.T) {
	t.Setenv("DOCKER_HOST", "")
	t.Setenv("DOCKER_CONTEXT", "")
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	c, err := docker.NewClient("")
	if err != nil || c.Host() != docker.DefaultHost {
		t.Errorf("default host: %v, %v", c, err)
	}
	t.Setenv("DOCKER_HOST", "unix:///run/podman/podman.sock")
	if c, err := docker.NewClient(""); err != nil || c.Host() != "unix:///run/podman/podman.sock" {
		t.Errorf("DOCKER_HOST: %v, %v", c, err)
	}
	if c, err := docker.NewClient("tcp://127.0.0.1:2375"); err != nil || c.Host() != "tcp://127.0.0.1:2375" {
		t.Errorf("tcp host: %v, %v", c, err)
	}
	for _, h := range []string{"ssh://host", "unix://", "/var/run/docker.sock", "tcp://no-port"} {
		if _, err := docker.NewClient(h); err == nil || !strings.Contains(err.Error(), "unix") || !strings.Contains(err.Error(), "tcp") {
			t.Errorf("NewClient(%q): %v, want an error naming the supported unix:// and tcp:// forms", h, err)
		}
	}
}
