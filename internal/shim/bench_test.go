package shim

import (
	"bytes"
	"log/slog"
	"os"
	"testing"
	"time"
)

// benchShapes are the output shapes of the relay throughput targets,
// 4 MiB each: 80-byte lines, and text without any newline.
func benchShapes() []struct {
	name string
	data []byte
} {
	const total = 4 << 20
	line := []byte("0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ build step ok\n")
	unit := []byte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
	return []struct {
		name string
		data []byte
	}{
		{"lines80", bytes.Repeat(line, total/len(line))},
		{"nonewline", bytes.Repeat(unit, total/len(unit))},
	}
}

// countingFile counts what it writes to an *os.File (/dev/null here: a
// real write syscall per batch, as on the shim's stdout).
type countingFile struct {
	f *os.File
	n int64
}

func (c *countingFile) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.f.Write(p)
}

// BenchmarkPumpEmitter measures the shim's output path: a script's bytes
// read from a pipe by pump, encoded into records by the emitter, stored
// for replay (memory window or spool file) and written to stdout.
func BenchmarkPumpEmitter(b *testing.B) {
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devnull.Close()
	log := slog.New(slog.DiscardHandler)
	for _, s := range benchShapes() {
		for _, storeKind := range []string{"memory", "file"} {
			b.Run(s.name+"/"+storeKind, func(b *testing.B) {
				// One store and emitter for all iterations, as in a shim
				// that runs script after script; the spool file is
				// rewritten from its start each time so it does not grow.
				var store replayStore = newMemoryStore(4 << 20)
				fs, err := newFileStore(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				defer fs.Close()
				if storeKind == "file" {
					store = fs
				}
				out := &countingFile{f: devnull}
				em := newEmitter(out, store, log)
				b.SetBytes(int64(len(s.data)))
				b.ReportAllocs()
				for b.Loop() {
					fs.end = 0
					before := out.n
					r, w, err := os.Pipe()
					if err != nil {
						b.Fatal(err)
					}
					go func() {
						for data := s.data; len(data) > 0; {
							n, err := w.Write(data[:min(len(data), 64<<10)])
							if err != nil {
								break
							}
							data = data[n:]
						}
						w.Close()
					}()
					pump(r, em, 20*time.Millisecond, nil, stdoutStream)
					r.Close()
					if out.n-before < int64(len(s.data)) || em.Offset() != out.n {
						b.Fatalf("wrote %d record bytes (stream offset %d of %d) for %d output bytes", out.n-before, em.Offset(), out.n, len(s.data))
					}
				}
			})
		}
	}
}
