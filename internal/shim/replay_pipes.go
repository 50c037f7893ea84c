package shim

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// pipeStore is the memory replay window kept in pipes rather than in the
// shim's heap: block records reach it by splice(2), which moves the pages
// the script wrote instead of copying them (the copy into a heap ring cost
// the shim as much as everything else it does with bulk output). It holds
// at least the last max bytes, in segments of one pipe each (oldest
// first); a segment whose bytes are all older than the window is emptied
// and reused. Replay is rare: it reads a segment out and writes it back.
type pipeStore struct {
	max   int64
	size  int // capacity of a segment's pipe
	segs  []*pipeSegment
	spare *pipeSegment // an emptied segment, reused before a new pipe is made
	end   int64        // stream offset after the newest byte
	null  int          // /dev/null, to empty segments without a copy
}

// pipeSegment is one pipe of a pipeStore, holding the stream bytes
// [start, start+n).
type pipeSegment struct {
	p        pipeEnds
	start, n int64
}

// pipeSegmentSize is the largest capacity a segment's pipe is given: a
// quarter of the window, a power of two from 64 KiB to this. A pipe that
// cannot get it (the user's pipe-buffer limits) is not used as a segment.
const pipeSegmentSize = 1 << 20

// fGetPipeSz is fcntl's F_GETPIPE_SZ (Linux).
const fGetPipeSz = 1032

// newPipeStore returns a pipeStore keeping at least max bytes (max > 0),
// or false when the shim cannot make pipes of pipeSegmentSize: the caller
// then keeps the window in its heap (memoryStore).
func newPipeStore(max int64) (*pipeStore, bool) {
	size := 64 << 10
	for size < pipeSegmentSize && int64(size) < max/4 {
		size *= 2
	}
	s := &pipeStore{max: max, size: size}
	seg, err := s.newSegment()
	if err != nil {
		return nil, false
	}
	s.segs = []*pipeSegment{seg}
	return s, true
}

// newSegment makes a pipe of s.size bytes for the stream's end.
func (s *pipeStore) newSegment() (*pipeSegment, error) {
	p, size, err := newPipe(s.size)
	if err != nil {
		return nil, err
	}
	if size < s.size {
		p.close()
		return nil, fmt.Errorf("make a replay pipe of %d bytes: the user's pipe-buffer limit allows %d", s.size, size)
	}
	return &pipeSegment{p: p, start: s.end}, nil
}

func (s *pipeStore) Kind() string  { return "memory" }
func (s *pipeStore) Oldest() int64 { return s.segs[0].start }

func (s *pipeStore) Close() error {
	for _, seg := range s.segs {
		seg.p.close()
	}
	if s.spare != nil {
		s.spare.p.close()
	}
	if s.null > 0 {
		syscall.Close(s.null)
	}
	return nil
}

func (s *pipeStore) Append(b []byte) error {
	for len(b) > 0 {
		seg := s.segs[len(s.segs)-1]
		k, err := syscall.Write(seg.p.w, b)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN):
			if err := s.grow(); err != nil {
				return err
			}
			continue
		case err != nil:
			return fmt.Errorf("keep records for replay: %w", os.NewSyscallError("write", err))
		}
		s.added(seg, k)
		b = b[k:]
	}
	return nil
}

func (s *pipeStore) AppendFrom(fd, n int) error {
	for n > 0 {
		seg := s.segs[len(s.segs)-1]
		k, err := syscall.Splice(fd, nil, seg.p.w, nil, n, spliceNonblock)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN):
			// The segment is full (or fd is empty, which the next
			// segment's splice reports as no progress).
			if seg.n == 0 {
				return errors.New("keep records for replay: the pipe holds fewer bytes than it should")
			}
			if err := s.grow(); err != nil {
				return err
			}
			continue
		case err != nil:
			return fmt.Errorf("keep records for replay: %w", os.NewSyscallError("splice", err))
		case k <= 0:
			return errors.New("keep records for replay: the pipe holds fewer bytes than it should")
		}
		s.added(seg, int(k))
		n -= int(k)
	}
	return nil
}

// added accounts for k bytes appended to seg, the newest segment, and
// empties the oldest segments the window no longer needs.
func (s *pipeStore) added(seg *pipeSegment, k int) {
	seg.n += int64(k)
	s.end += int64(k)
	for len(s.segs) > 1 && s.end-s.segs[1].start >= s.max {
		old := s.segs[0]
		s.segs = s.segs[1:]
		s.retire(old)
	}
}

// retire empties seg and keeps it as the spare (or closes it).
func (s *pipeStore) retire(seg *pipeSegment) {
	if s.spare != nil || s.drop(seg) != nil {
		seg.p.close()
		return
	}
	s.spare = seg
}

// drop empties seg's pipe without copying its bytes.
func (s *pipeStore) drop(seg *pipeSegment) error {
	if seg.n == 0 {
		return nil
	}
	if err := spliceToNull(seg.p.r, int(seg.n), &s.null); err != nil {
		return err
	}
	seg.n = 0
	return nil
}

// grow starts a new newest segment: the spare, a new pipe, or, when no
// pipe can be made, the oldest segment (the window is then smaller than
// asked, and Oldest says so).
func (s *pipeStore) grow() error {
	seg := s.spare
	s.spare = nil
	if seg == nil {
		var err error
		if seg, err = s.newSegment(); err != nil {
			if len(s.segs) < 2 {
				return fmt.Errorf("keep records for replay: %w", err)
			}
			seg = s.segs[0]
			s.segs = s.segs[1:]
			if err := s.drop(seg); err != nil {
				return fmt.Errorf("keep records for replay: %w", err)
			}
		}
	}
	seg.start, seg.n = s.end, 0
	s.segs = append(s.segs, seg)
	return nil
}

// CopyRange writes the stream bytes [from, to) to w. Each segment the
// range touches is read out of its pipe and written back.
func (s *pipeStore) CopyRange(w io.Writer, from, to int64) error {
	if from < s.Oldest() || to > s.end || from > to {
		return fmt.Errorf("replay range [%d, %d) outside retained [%d, %d)", from, to, s.Oldest(), s.end)
	}
	var buf []byte
	for _, seg := range s.segs {
		lo, hi := max(from, seg.start), min(to, seg.start+seg.n)
		if lo >= hi {
			continue
		}
		buf = append(buf[:0], make([]byte, seg.n)...)
		if err := seg.peek(buf); err != nil {
			return fmt.Errorf("replay records: %w", err)
		}
		if _, err := w.Write(buf[lo-seg.start : hi-seg.start]); err != nil {
			return err
		}
	}
	return nil
}

// peek reads the segment's bytes into buf (len(buf) == seg.n) and writes
// them back, leaving the segment as it was.
func (seg *pipeSegment) peek(buf []byte) error {
	for got := 0; got < len(buf); {
		k, err := syscall.Read(seg.p.r, buf[got:])
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return os.NewSyscallError("read", err)
		case k <= 0:
			return errors.New("a replay pipe holds fewer bytes than it should")
		}
		got += k
	}
	for put := 0; put < len(buf); {
		k, err := syscall.Write(seg.p.w, buf[put:])
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return fmt.Errorf("put bytes back into a replay pipe: %w", os.NewSyscallError("write", err))
		}
		put += k
	}
	return nil
}
