package docker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tether-ci/tether/client/docker"
	"github.com/tether-ci/tether/internal/dockerengine"
	"github.com/tether-ci/tether/internal/testing/dockertest"
)

// suite is what the tests share: one private podman service with the
// busybox image loaded, and a tether-shim built from the working tree.
type suite struct {
	engine  *dockertest.Engine
	err     error // why engine is nil
	shim    string
	busybox string
	client  *docker.Client // of engine, shared so the ulimit fallback is learnt once
}

// env is set up by TestMain.
var env suite

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "tether-docker-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if env.shim, err = dockertest.BuildShim(ctx, dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env.engine, env.err = dockertest.Start(ctx)
	if env.err == nil {
		defer func() {
			if err := env.engine.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "stop the podman service:", err)
			}
		}()
		if env.client, err = docker.NewClient(env.engine.Host); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer env.client.Close()
		refs, err := env.engine.LoadImages(ctx, "busybox")
		if err != nil {
			env.err = fmt.Errorf("load the busybox image: %w", err)
		} else {
			env.busybox = refs[0]
		}
	}
	return m.Run()
}

// needEngine returns a client of the suite's engine, or ends the test when
// there is none (failing under CI).
func needEngine(t *testing.T) *docker.Client {
	t.Helper()
	if errors.Is(env.err, dockertest.ErrNoPodman) {
		dockertest.Unavailable(t, "%v", env.err)
	}
	if env.err != nil {
		t.Fatalf("no podman service: %v", env.err)
	}
	return env.client
}

// engineOf returns an engine API client for c's engine, for inspecting
// what the backend left.
func engineOf(t *testing.T, c *docker.Client) *dockerengine.Client {
	t.Helper()
	e, err := dockerengine.NewClient(c.Host())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}
