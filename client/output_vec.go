package client

import "io"

// maxQueued is how many block payloads wait for one vectored write at most.
const maxQueued = 64

// vectorWriter writes several buffers in one call (writev(2) where the
// output is a file or pipe): a stream of block records, whose payloads
// are written from the decoder's buffer, then costs one system call per
// read instead of one per block.
type vectorWriter interface {
	writeVec(bufs [][]byte) error
}

// queueDirect queues p, a block payload in the decoder's buffer, to be
// written with the others queued (flushQueued). Output waiting in pending
// goes first. The decoder must not reuse its buffer before the queue is
// written: the reader writes it before every fill (see read).
func (s *stream) queueDirect(p []byte) error {
	if len(s.pending) > 0 || len(s.queued) >= maxQueued {
		if err := s.flush(); err != nil {
			return err
		}
	}
	s.queued = append(s.queued, p)
	return nil
}

// flushQueued writes the queued block payloads.
func (s *stream) flushQueued() error {
	if len(s.queued) == 0 {
		return nil
	}
	var err error
	if s.vec != nil {
		err = s.vec.writeVec(s.queued)
	} else {
		for _, b := range s.queued {
			if err = writeFull(s.output, b); err != nil {
				break
			}
		}
	}
	clear(s.queued) // the decoder's buffer is not pinned
	s.queued = s.queued[:0]
	if err != nil {
		s.outErr = err
	}
	return err
}

// writeFull writes p to w, reporting a short write as an error.
func writeFull(w io.Writer, p []byte) error {
	n, err := w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	return err
}
