package local_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/local"
	"github.com/tether-ci/tether/internal/testing/syncbuf"
	"github.com/tether-ci/tether/internal/testing/testbin"
)

// shimBin is the tether-shim binary built once for this package's tests
// (from source: the tests do not depend on `make build`).
var shimBin string

func TestMain(m *testing.M) {
	os.Exit(testbin.Main(m, map[string]string{local.ShimName: testbin.Shim}, func(dir string) {
		shimBin = filepath.Join(dir, local.ShimName)
	}))
}

// script writes an executable shell script into t's temp dir.
func script(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// startShim starts a real tether-shim, closed at the end of the test.
func startShim(t *testing.T, args ...string) *local.Shim {
	t.Helper()
	return startShimConfig(t, local.Config{Args: args})
}

// startShimConfig starts the test's tether-shim with cfg (its Shim and
// Stderr are set here), closed at the end of the test; its stderr is
// logged if the test failed.
func startShimConfig(t *testing.T, cfg local.Config) *local.Shim {
	t.Helper()
	var stderr syncbuf.Buffer
	cfg.Shim, cfg.Stderr = shimBin, &stderr
	s, err := local.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close shim: %v", err)
		}
		if t.Failed() {
			t.Logf("shim stderr:\n%s", stderr.String())
		}
	})
	return s
}

// fastOpts are session options for tests: frequent pings and quick
// reconnects, and stall and reconnect timeouts long enough that a loaded
// machine (a shim that takes seconds to answer its first resume command)
// never breaks a connection the test did not break itself: tests that
// count events or reconnects rely on it. A test about stalls sets its own
// StallTimeout.
func fastOpts(out *syncbuf.Buffer) client.Options {
	return client.Options{
		Output:           out,
		PingInterval:     50 * time.Millisecond,
		StallTimeout:     30 * time.Second,
		ReconnectMin:     time.Millisecond,
		ReconnectMax:     20 * time.Millisecond,
		ReconnectTimeout: 60 * time.Second,
		CancelTimeout:    20 * time.Second,
	}
}
