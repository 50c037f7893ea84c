package lockedbuf

import (
	"strings"
	"sync"
	"testing"
)

// Writers in several goroutines lose nothing, and a reader's copy is its
// own (run with -race).
func TestBufferConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				_, _ = b.Write([]byte("x"))
				_ = b.Bytes()
			}
		}()
	}
	wg.Wait()
	got := b.Bytes()
	if string(got) != strings.Repeat("x", 800) || b.String() != string(got) {
		t.Fatalf("got %d bytes, want 800", len(got))
	}
	got[0] = 'y'
	if b.String()[0] != 'x' {
		t.Fatal("Bytes returned the buffer itself, not a copy")
	}
}
