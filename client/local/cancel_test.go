package local_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/local"
	"github.com/tether-ci/tether/internal/testing/syncbuf"
)

// cancelLosingTransport loses the first cancel command written to it, the
// way a connection that breaks right after the write loses what was still
// in flight: the write succeeds, the shim never sees it, the connection is
// cut.
type cancelLosingTransport struct {
	s *local.Shim

	mu   sync.Mutex
	lost bool
}

func (t *cancelLosingTransport) Connect(ctx context.Context) (client.Conn, error) {
	c, err := t.s.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &cancelLosingConn{Conn: c, t: t}, nil
}

type cancelLosingConn struct {
	client.Conn
	t *cancelLosingTransport
}

func (c *cancelLosingConn) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"cmd":"cancel"`)) {
		c.t.mu.Lock()
		lose := !c.t.lost
		c.t.lost = true
		c.t.mu.Unlock()
		if lose {
			c.t.s.Cut()
			return len(p), nil
		}
	}
	return c.Conn.Write(p)
}

// A cancel lost with a broken connection is sent again on the next one:
// the job ends cancelled at once (not after CancelTimeout with no result),
// and the resent cancel does not count as a second one (the after-script
// still runs to its end).
func TestCancelLostWithTheConnectionIsResent(t *testing.T) {
	s := startShim(t)
	tr := &cancelLosingTransport{s: s}
	var out syncbuf.Buffer
	job := client.Job{
		Scripts: []string{script(t, "long.sh", "trap 'echo terminated; exit 143' TERM\necho started\nsleep 60 & wait $!\n")},
		After:   []string{script(t, "after.sh", "echo cleanup started; sleep 0.5; echo cleanup done\n")},
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("test cancels the job")
	go func() {
		out.WaitFor(t, "started\n", 10*time.Second)
		cancel(cause)
	}()
	opts := fastOpts(&out)
	opts.CancelTimeout = 8 * time.Second
	res, err := client.Run(ctx, tr, job, opts)
	if !errors.Is(err, cause) || errors.Is(err, client.ErrNoResult) {
		t.Fatalf("Run error %v, want the cancel's cause and a result", err)
	}
	if !res.Cancelled || res.ExitCode != 143 || res.Reconnects == 0 {
		t.Fatalf("result %+v, want cancelled with exit 143 after a reconnect", res)
	}
	if got, want := out.String(), "started\nterminated\ncleanup started\ncleanup done\n"; got != want {
		t.Fatalf("output %q, want %q", got, want)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if !tr.lost {
		t.Fatal("the transport never saw a cancel command to lose")
	}
}
