package actionsrunner

import (
	"bytes"
	"io"
	"sync"
)

// hookStreams reads a hook's stdout and stderr into the step log as
// actions/runner's ProcessInvoker.cs does: each stream has its own reader
// (StartReadStream, StreamReader.ReadLine: "\n", "\r\n" and a lone "\r"
// end a line, a last line without one is delivered at the end) that
// queues its lines and signals; the processing loop (ProcessOutput) takes
// what both queues hold, the stderr lines first, then the stdout lines,
// into the OutputManager. So lines of the two streams interleave as they
// arrive, batch by batch, and each stream keeps its own order.
type hookStreams struct {
	log *StepLog

	mu       sync.Mutex
	err, out [][]byte
	signal   chan struct{} // one pending wake-up of the processing loop
	done     chan struct{} // closed by finish
	stopped  chan struct{} // closed when the loop has processed everything
}

func newHookStreams(log *StepLog) *hookStreams {
	h := &hookStreams{log: log, signal: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{})}
	go h.loop()
	return h
}

// writers returns the hook's stdout and stderr writers (each written by
// one goroutine at a time, as os/exec's copying does).
func (h *hookStreams) writers() (stdout, stderr *lineWriter) {
	return &lineWriter{h: h}, &lineWriter{h: h, stderr: true}
}

// finish ends the loop once the writers were closed (their last lines
// queued) and the queues processed.
func (h *hookStreams) finish() {
	close(h.done)
	<-h.stopped
}

func (h *hookStreams) loop() {
	defer close(h.stopped)
	for {
		select {
		case <-h.signal:
			h.process()
		case <-h.done:
			h.process()
			return
		}
	}
}

// process is ProcessOutput: the stderr lines queued, then the stdout ones.
func (h *hookStreams) process() {
	h.mu.Lock()
	errLines, outLines := h.err, h.out
	h.err, h.out = nil, nil
	h.mu.Unlock()
	for _, l := range errLines {
		h.log.addLine(decode(l))
	}
	for _, l := range outLines {
		h.log.addLine(decode(l))
	}
}

// lineWriter cuts one stream into lines as StreamReader.ReadLine does and
// queues them.
type lineWriter struct {
	h       *hookStreams
	stderr  bool
	pending []byte // an unfinished line, perhaps ending in "\r"
}

var _ io.Writer = (*lineWriter)(nil)

func (w *lineWriter) Write(p []byte) (int, error) {
	w.pending = append(w.pending, p...)
	var lines [][]byte
	for {
		i := bytes.IndexAny(w.pending, "\r\n")
		if i < 0 {
			break
		}
		end := i + 1
		if w.pending[i] == '\r' {
			if i+1 == len(w.pending) {
				break // "\r" or "\r\n": the next byte tells
			}
			if w.pending[i+1] == '\n' {
				end++
			}
		}
		lines = append(lines, bytes.Clone(w.pending[:i]))
		w.pending = w.pending[end:]
	}
	w.pending = bytes.Clone(w.pending) // do not pin what was cut off
	w.queue(lines)
	return len(p), nil
}

// Close delivers the last line (one without its end, or a final lone
// "\r"'s).
func (w *lineWriter) Close() error {
	if len(w.pending) > 0 {
		line := bytes.TrimSuffix(w.pending, []byte("\r"))
		w.pending = nil
		w.queue([][]byte{line})
	}
	return nil
}

func (w *lineWriter) queue(lines [][]byte) {
	if len(lines) == 0 {
		return
	}
	h := w.h
	h.mu.Lock()
	if w.stderr {
		h.err = append(h.err, lines...)
	} else {
		h.out = append(h.out, lines...)
	}
	h.mu.Unlock()
	select {
	case h.signal <- struct{}{}:
	default:
	}
}
