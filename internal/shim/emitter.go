package shim

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/tether-ci/tether/protocol"
)

// errClosed marks an emitter after the final record.
var errClosed = errors.New("record stream closed after the final record")

// emitter is the only writer of the shim's stdout. Every record passes
// through it, is numbered by the encoder, stored for replay and written
// in one write per batch.
type emitter struct {
	// gate lets every other record go ahead of script output: Output
	// holds it for reading, the other writers for writing, and a waiting
	// writer blocks new readers. Without it a pump that keeps mu busy
	// could write megabytes more while a command's answer (a ping's, a
	// resume's) waits for mu, and a reconnecting client, which drops all
	// it reads before its resume answer, could find the shim run past a
	// memory replay window. Taken before mu.
	gate  sync.RWMutex
	mu    sync.Mutex
	out   io.Writer
	enc   *protocol.Encoder
	store replayStore
	buf   []byte
	// held holds sequenced records encoded by Hold and not written yet:
	// they go out at the front of the next write.
	held []byte
	err  error // first write error; the stream is unusable after it
	// outPipe is stdout when it is a pipe (pipeOut): script output can
	// then go to it as block records by tee(2) (see Blocks).
	outPipe rawPipe
	pipeOut bool
	stage   *stage // created by the first Blocks
	// marks are offsets where records start, for replays in pieces (see
	// mark); markGap is their least distance.
	marks   []int64
	markGap int64
	log     *slog.Logger
	// failed is closed on the first write error so the shim can stop.
	failed chan struct{}
}

func newEmitter(out io.Writer, store replayStore, log *slog.Logger) *emitter {
	e := &emitter{out: out, enc: protocol.NewEncoder(), store: store, log: log, failed: make(chan struct{})}
	if f, ok := out.(*os.File); ok {
		growPipe(f) // stdout is a pipe (containerd's FIFO, the local backend's pipe)
		e.outPipe, e.pipeOut = pipeOf(f)
	}
	return e
}

// write stores and sends b, which holds sequenced records when sequenced
// is set (built on start, so the held records are at its front). An
// unsequenced record goes out after the held ones. Called with mu held.
func (e *emitter) write(b []byte, sequenced bool) {
	if !sequenced {
		e.writeHeld()
	}
	if e.err != nil || len(b) == 0 {
		return
	}
	if sequenced {
		e.mark(e.enc.Offset() - int64(len(b))) // b holds every record encoded and not stored yet
		if err := e.store.Append(b); err != nil {
			e.fail(err)
			return
		}
	}
	if _, err := e.out.Write(b); err != nil {
		e.fail(fmt.Errorf("write records to stdout: %w", err))
	}
}

// writeHeld writes the held records on their own. Called with mu held.
func (e *emitter) writeHeld() {
	if len(e.held) > 0 {
		e.write(e.held, true)
		e.held = e.held[:0]
	}
}

// start returns e.buf emptied but for the held records, which the next
// sequenced write carries at its front. Called with mu held.
func (e *emitter) start() []byte {
	b := append(e.buf[:0], e.held...)
	e.held = e.held[:0]
	return b
}

func (e *emitter) fail(err error) {
	e.err = err
	e.log.Error("record stream failed", "err", err)
	close(e.failed)
}

// Output sends script output bytes.
func (e *emitter) Output(data []byte) { e.output(e.enc.AppendOutput, data) }

// Stderr sends a script's stderr bytes kept apart from its stdout, as
// stderr records.
func (e *emitter) Stderr(data []byte) { e.output(e.enc.AppendStderr, data) }

// OutputBlocks sends script output bytes as block records: output read
// from the script's pipe while a burst of bulk output flows (see pump),
// which as line records would cost a record per line.
func (e *emitter) OutputBlocks(data []byte) { e.output(e.enc.AppendBlocks, data) }

// output encodes data with encode and sends it.
func (e *emitter) output(encode func(dst, data []byte) []byte, data []byte) {
	e.gate.RLock()
	defer e.gate.RUnlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.buf = encode(e.start(), data)
	e.write(e.buf, true)
	if cap(e.buf) > 1<<20 {
		e.buf = nil // do not pin a huge buffer
	}
}

// Record sends a sequenced JSON record.
func (e *emitter) Record(t protocol.Type, v any) {
	e.gate.Lock()
	defer e.gate.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	var err error
	e.buf, err = e.enc.AppendJSON(e.start(), t, v)
	if err != nil {
		e.log.Error("cannot encode record", "type", t.String(), "err", err)
	}
	e.write(e.buf, true) // the held records, at least
}

// Hold encodes a sequenced JSON record now and sends it with the next
// write: the caller knows another record follows at once (a script's
// status, then the next script's begin record or the job record), and one
// write instead of two spares a wake-up of the client per script. Every
// other method writes the held records first.
func (e *emitter) Hold(t protocol.Type, v any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var err error
	if e.held, err = e.enc.AppendJSON(e.held, t, v); err != nil {
		e.log.Error("cannot encode record", "type", t.String(), "err", err)
	}
}

// Unsequenced sends an unsequenced JSON record (not stored for replay).
func (e *emitter) Unsequenced(t protocol.Type, v any) {
	e.gate.Lock()
	defer e.gate.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.unsequenced(t, v)
}

func (e *emitter) unsequenced(t protocol.Type, v any) {
	var err error
	e.buf, err = protocol.AppendUnsequenced(e.buf[:0], t, v)
	if err != nil {
		e.log.Error("cannot encode record", "type", t.String(), "err", err)
		return
	}
	e.write(e.buf, false)
}

// Offset returns the current end of the sequenced stream.
func (e *emitter) Offset() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.enc.Offset()
}

// Resume answers one resume command (see ResumeAll).
func (e *emitter) Resume(nonce string, from int64) {
	e.ResumeAll([]protocol.Command{{Cmd: protocol.CmdResume, Nonce: nonce, From: from}}, nil)
}

// Close writes the final record and refuses every record after it (output
// of background children that outlive the shim's decision to exit).
func (e *emitter) Close(x protocol.Exit) {
	e.gate.Lock()
	defer e.gate.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	var err error
	e.buf, err = e.enc.AppendJSON(e.start(), protocol.TypeExit, x)
	if err != nil {
		e.log.Error("cannot encode the final record", "err", err)
	}
	e.write(e.buf, true) // the held records, at least
	if e.err == nil {
		e.err = errClosed
	}
	if e.stage != nil {
		e.stage.close()
		e.stage = nil
	}
}
