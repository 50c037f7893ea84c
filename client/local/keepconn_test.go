package local_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/internal/testing/syncbuf"
)

// keptFirst is a transport whose first Connect returns a kept connection
// (nil: none) and counts the connections it makes itself.
type keptFirst struct {
	t     client.Transport
	kept  client.Conn
	dials atomic.Int32
}

func (k *keptFirst) Connect(ctx context.Context) (client.Conn, error) {
	if c := k.kept; c != nil {
		k.kept = nil
		return c, nil
	}
	k.dials.Add(1)
	return k.t.Connect(ctx)
}

// TestKeepConnServesTheNextJob: a session that ends with its job's record
// hands its connection to Options.KeepConn, open and synced, and the next
// job (FromEnd, as a GitLab stage) runs over it with no connection of its
// own, getting its own output alone and its own exit code; a session with
// ExitShim closes its connection as before.
func TestKeepConnServesTheNextJob(t *testing.T) {
	s := startShim(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr := &keptFirst{t: s}
	for i, tc := range []struct {
		body, want string
		code       int
	}{
		{"echo first; printf 'partial'\n", "first\npartial", 0},
		{"echo second; exit 4\n", "second\n", 4},
		{"printf 'third'\n", "third", 0},
	} {
		var out syncbuf.Buffer
		o := fastOpts(&out)
		o.FromEnd = i > 0
		var kept client.Conn
		o.KeepConn = func(c client.Conn) { kept = c }
		hadKept := tr.kept != nil
		dials := tr.dials.Load()
		res, err := client.Run(ctx, tr, client.Job{Scripts: []string{script(t, "s.sh", tc.body)}}, o)
		if err != nil {
			t.Fatalf("job %d: Run: %v", i, err)
		}
		if got := out.String(); got != tc.want || res.ExitCode != tc.code {
			t.Fatalf("job %d: output %q, exit %d; want %q, %d", i, got, res.ExitCode, tc.want, tc.code)
		}
		if hadKept && tr.dials.Load() != dials {
			t.Fatalf("job %d: the transport connected %d times although a kept connection was there", i, tr.dials.Load()-dials)
		}
		if kept == nil {
			t.Fatalf("job %d: KeepConn was not called", i)
		}
		tr.kept = kept
	}
	if n := tr.dials.Load(); n != 1 {
		t.Fatalf("%d connections for three jobs, want 1", n)
	}
	// ExitShim: the connection is not kept.
	var out syncbuf.Buffer
	o := fastOpts(&out)
	o.FromEnd, o.ExitShim = true, true
	called := false
	o.KeepConn = func(c client.Conn) { called = true; _ = c.Close() }
	if _, err := client.Run(ctx, tr, client.Job{Scripts: []string{script(t, "s.sh", "true\n")}}, o); err != nil {
		t.Fatalf("last job: Run: %v", err)
	}
	if called {
		t.Fatal("KeepConn was called for a session with ExitShim")
	}
}
