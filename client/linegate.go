package client

import (
	"bytes"
	"io"
	"sync"
)

// LineGate is a job's output writer (Options.Output) that knows whether the
// output written so far ends inside a line, and keeps other writers'
// notices out of such an open line. A terminal that shows the job's output
// and the runner's own notices (reconnects, a summary) side by side, or a
// CI log that merges both, then never gets a notice spliced into the
// middle of one of the job's lines: a notice written while the output's
// last line is open waits until the output writes a newline, or until End.
//
// The output's bytes pass through unchanged. A LineGate is safe for
// concurrent use; a session that writes to it keeps writing several
// buffers in one system call where the underlying writer is a file.
type LineGate struct {
	mu   sync.Mutex
	out  io.Writer
	vec  vectorWriter // out's, when it is a file
	open bool         // the last byte written to out was not '\n'
	// ended: End was called; notices pass straight through.
	ended bool
	held  []heldNotice
}

// heldNotice is a notice write waiting for the output's line to end.
type heldNotice struct {
	w io.Writer
	p []byte
}

// NewLineGate returns a LineGate writing the job's output to out.
func NewLineGate(out io.Writer) *LineGate {
	return &LineGate{out: out, vec: vectorWriterFor(out)}
}

// Write writes p, a part of the job's output, to the underlying writer.
// Notices held back by an open line are written right after the newline
// that closes it (p is split there when more output follows it).
func (g *LineGate) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.write(p)
}

func (g *LineGate) write(p []byte) (int, error) {
	if len(g.held) > 0 {
		if i := bytes.LastIndexByte(p, '\n'); i >= 0 && i < len(p)-1 {
			n, err := g.writeOut(p[:i+1])
			if err != nil {
				return n, err
			}
			m, err := g.writeOut(p[i+1:])
			return n + m, err
		}
	}
	return g.writeOut(p)
}

// writeOut writes p and releases the held notices when it closed the line.
func (g *LineGate) writeOut(p []byte) (int, error) {
	n, err := g.out.Write(p)
	if n > 0 {
		g.open = p[n-1] != '\n'
	}
	if !g.open {
		g.release()
	}
	return n, err
}

// writeVec writes bufs in one call where the underlying writer allows.
func (g *LineGate) writeVec(bufs [][]byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.vec == nil || len(g.held) > 0 {
		// One at a time, so held notices go out at the first newline.
		for _, b := range bufs {
			if err := writeFull(writerFunc(g.write), b); err != nil {
				return err
			}
		}
		return nil
	}
	last := -1
	for i, b := range bufs {
		if len(b) > 0 {
			last = i
		}
	}
	if last < 0 {
		return nil
	}
	err := g.vec.writeVec(bufs[:last+1])
	if err == nil {
		b := bufs[last]
		g.open = b[len(b)-1] != '\n'
	}
	return err
}

// MidLine reports whether the output written so far ends inside a line
// (its last byte is not a newline).
func (g *LineGate) MidLine() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open
}

// Notices returns a writer for notices shown beside the job's output (a
// runner's stderr, say): each Write goes to w at once while the output is
// at a line's start, and waits for the newline that ends the output's
// current line otherwise (or for End). Writes to w keep their order.
func (g *LineGate) Notices(w io.Writer) io.Writer {
	return &gatedWriter{g: g, w: w}
}

// End says the job's output ended: the held notices are written now and
// later ones go straight through. When the output ends inside a line and
// newline is not nil, a newline is written to newline first, so the
// notices start on a line of their own: pass the notices' writer when it
// shows on the same screen or file as the output (the output itself stays
// the job's bytes), the output's writer when the output may carry the
// runner's own lines after the job's (a CI log), or nil.
func (g *LineGate) End(newline io.Writer) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	var err error
	if g.open && newline != nil {
		if newline == io.Writer(g) {
			newline = g.out // g's own lock is held
		}
		_, err = newline.Write([]byte{'\n'})
		if err == nil {
			g.open = false
		}
	}
	g.ended = true
	g.release()
	return err
}

// release writes the held notices, in order.
func (g *LineGate) release() {
	for _, n := range g.held {
		_, _ = n.w.Write(n.p) // a notice that cannot be written is lost, as it would be unheld
	}
	clear(g.held)
	g.held = g.held[:0]
}

// gatedWriter is a LineGate's notice writer.
type gatedWriter struct {
	g *LineGate
	w io.Writer
}

func (n *gatedWriter) Write(p []byte) (int, error) {
	g := n.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open && !g.ended {
		g.held = append(g.held, heldNotice{w: n.w, p: bytes.Clone(p)})
		return len(p), nil
	}
	return n.w.Write(p)
}

// writerFunc is a function as an io.Writer.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// outputVectorWriter returns the vectorWriter for a session's output: a
// LineGate's own, which tracks the line, or a file's.
func outputVectorWriter(w io.Writer) vectorWriter {
	if g, ok := w.(*LineGate); ok {
		return g
	}
	return vectorWriterFor(w)
}
