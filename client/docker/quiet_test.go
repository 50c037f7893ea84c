package docker_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/client/docker"
	"github.com/tether-ci/tether/internal/testing/syncbuf"
)

// Starting a job logs nothing alarming at the default level on an engine
// that answers the first create with a known, harmless error (rootful
// Podman without CAP_SYS_RESOURCE: a 500 "error setting rlimit" that the
// backend handles by retrying with explicit limits): info-level logs carry
// no raw engine error.
func TestStartJobIsQuietOnHarmlessEngineAnswers(t *testing.T) {
	needEngine(t)
	c, err := docker.NewClient(env.engine.Host) // a fresh client: it has not learnt the ulimit fallback yet
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var info, debug syncbuf.Buffer
	log := slog.New(teeHandler{
		slog.NewTextHandler(&info, &slog.HandlerOptions{Level: slog.LevelInfo}),
		slog.NewTextHandler(&debug, &slog.HandlerOptions{Level: slog.LevelDebug}),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ct, err := c.StartJob(ctx, docker.Spec{Image: env.busybox, ShimBinary: env.shim, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ct.Remove(context.Background()) }()
	t.Logf("debug log:\n%s", debug.String())
	for _, bad := range []string{"500", "Internal Server Error", "rlimit"} {
		if strings.Contains(info.String(), bad) {
			t.Errorf("info-level log mentions %q:\n%s", bad, info.String())
		}
	}
}

// teeHandler sends each record to every handler that is enabled for it.
type teeHandler []slog.Handler

func (h teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	for _, x := range h {
		if x.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

func (h teeHandler) Handle(ctx context.Context, r slog.Record) error {
	for _, x := range h {
		if x.Enabled(ctx, r.Level) {
			if err := x.Handle(ctx, r.Clone()); err != nil {
				return err
			}
		}
	}
	return nil
}

func (h teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make(teeHandler, len(h))
	for i, x := range h {
		out[i] = x.WithAttrs(as)
	}
	return out
}

func (h teeHandler) WithGroup(name string) slog.Handler {
	out := make(teeHandler, len(h))
	for i, x := range h {
		out[i] = x.WithGroup(name)
	}
	return out
}
