// Package syncbuf is a test helper: a bytes.Buffer that a session's (or a
// transport's) goroutines may write while the test reads it.
package syncbuf

import (
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/internal/lockedbuf"
)

// Buffer is a bytes.Buffer safe for concurrent use (lockedbuf.Buffer)
// that a test can wait on. The zero value is ready.
type Buffer struct {
	lockedbuf.Buffer
}

// WaitFor polls until the buffer contains s, failing t after timeout.
func (b *Buffer) WaitFor(t testing.TB, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(b.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("output never contained %q; got %q", s, b.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
