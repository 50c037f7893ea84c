package shim

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/tether-ci/tether/protocol"
)

// writeLog records every write the emitter makes to stdout.
type writeLog struct{ writes [][]byte }

func (w *writeLog) Write(p []byte) (int, error) {
	w.writes = append(w.writes, bytes.Clone(p))
	return len(p), nil
}

func (w *writeLog) all() []byte { return bytes.Join(w.writes, nil) }

// A held record goes out at the front of the next write, whatever that
// write is; before it nothing is written, and the stream stays exactly
// what it would have been without holding (offsets included).
func TestHeldRecordGoesOutWithTheNextWrite(t *testing.T) {
	st := protocol.Status{Script: "/s", Phase: "script", Job: "j"}
	for name, next := range map[string]func(*emitter){
		"record": func(e *emitter) {
			e.Record(protocol.TypeBegin, protocol.Begin{Script: "/t", Phase: "script", Job: "j"})
		},
		"output": func(e *emitter) { e.Output([]byte("late output of a background child\n")) },
		"close":  func(e *emitter) { e.Close(protocol.Exit{Reason: protocol.ReasonDeadline, ExitCode: 124}) },
		"ping": func(e *emitter) {
			e.Unsequenced(protocol.TypeAlive, protocol.Alive{Nonce: "n", State: protocol.StateIdle})
		},
		"resume": func(e *emitter) { e.Resume("k", 0) },
	} {
		t.Run(name, func(t *testing.T) {
			var held, plain writeLog
			eh := newEmitter(&held, newMemoryStore(1<<20), slog.New(slog.DiscardHandler))
			ep := newEmitter(&plain, newMemoryStore(1<<20), slog.New(slog.DiscardHandler))
			eh.Hold(protocol.TypeStatus, st)
			ep.Record(protocol.TypeStatus, st)
			if len(held.writes) != 0 {
				t.Fatalf("a held record was written at once: %q", held.writes)
			}
			next(eh)
			next(ep)
			if !bytes.Equal(held.all(), plain.all()) {
				t.Fatalf("stream with a held record:\n%s\nwithout:\n%s", held.all(), plain.all())
			}
			if first := string(held.writes[0]); !strings.HasPrefix(first, "s 0 ") {
				t.Fatalf("first write %q does not start with the held status record", first)
			}
			if name == "record" || name == "output" || name == "close" {
				if len(held.writes) != 1 {
					t.Fatalf("%d writes, want the held record and the next one in one: %q", len(held.writes), held.writes)
				}
			}
			var replay bytes.Buffer
			if err := eh.store.CopyRange(&replay, 0, eh.enc.Offset()); err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(replay.Bytes(), held.writes[0][:len("s 0 ")]) {
				t.Fatalf("the held record is missing from the replay store: %q", replay.Bytes())
			}
		})
	}
}
