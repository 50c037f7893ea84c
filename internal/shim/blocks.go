package shim

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// blockMin is the least output waiting in the script's pipe that is sent
// as block records (see emitter.Blocks) rather than read and escaped:
// bulk output moves without passing through the shim's memory, while a
// script that prints a line at a time keeps the readable o and p records.
const blockMin = 4 * 1024

// stageBlocks is how many block records are staged before they go to
// stdout together. With their headers they take at most 6 of the staging
// pipe's 256 page slots each (a payload spans at most 5 pages).
const stageBlocks = 32

// rawPipe is the file descriptor of a pipe the shim reads or writes with
// tee(2) and splice(2), with the runtime's poller behind it.
type rawPipe struct {
	fd int
	rc syscall.RawConn
}

// pipeOf returns f as a rawPipe, or false when f is not a pipe (a pty, a
// regular file, a terminal): tee and splice need pipes.
func pipeOf(f *os.File) (rawPipe, bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return rawPipe{}, false
	}
	var fd int
	var isPipe bool
	_ = rc.Control(func(u uintptr) {
		var st syscall.Stat_t
		fd = int(u)
		isPipe = syscall.Fstat(fd, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFIFO
	})
	return rawPipe{fd: fd, rc: rc}, isPipe
}

// stage is a private pipe where block records are put together (headers
// written, payloads moved in from the script's pipe by splice(2), no copy)
// before they go to stdout in one tee(2) and into the replay store: the
// client is woken once per batch instead of twice per record, and the
// script's pipe is locked only to move pages out of it. Its ends are
// non-blocking: the shim is its only reader, so it must never wait on it.
type stage struct {
	out  pipeEnds   // the staging pipe itself
	n    int        // bytes in it
	in   pipeEnds   // the intake: a batch taken out of the script's pipe
	hdr  pipeEnds   // the header pipe: the batch's block headers
	cuts []blockCut // the batch's blocks
}

// pipeEnds are the two ends of a pipe the shim made for itself.
type pipeEnds struct{ r, w int }

// newPipe makes a non-blocking pipe for the shim's own use and asks for a
// buffer of size bytes. It returns the capacity the kernel gave: less when
// the user's pipe-buffer limits refuse (one page, past the soft limit).
func newPipe(size int) (pipeEnds, int, error) {
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		return pipeEnds{}, 0, os.NewSyscallError("pipe2", err)
	}
	p := pipeEnds{r: fds[0], w: fds[1]}
	got, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(p.w), fSetPipeSz, uintptr(size))
	if e != 0 {
		got, _, e = syscall.Syscall(syscall.SYS_FCNTL, uintptr(p.w), fGetPipeSz, 0)
		if e != 0 {
			got = 0
		}
	}
	return p, int(got), nil
}

func (p pipeEnds) close() {
	syscall.Close(p.r)
	syscall.Close(p.w)
}

func newStage() (*stage, error) {
	var st stage
	for _, p := range []*pipeEnds{&st.out, &st.in, &st.hdr} {
		var err error
		if *p, _, err = newPipe(pipeSize); err != nil {
			st.close()
			return nil, err
		}
	}
	return &st, nil
}

func (s *stage) close() {
	for _, p := range []pipeEnds{s.out, s.in, s.hdr} {
		if p != (pipeEnds{}) {
			p.close()
		}
	}
}

// Blocks sends the n bytes waiting in the pipe src (a script's output) as
// block records, staged (see stage) and sent to stdout and the replay store
// without passing through the shim's memory. It returns false, having sent
// nothing, when that is not possible (stdout is not a pipe, or the stream
// failed): the caller then reads the bytes itself. Only bytes already
// waiting may be asked for.
func (e *emitter) Blocks(src rawPipe, n int) bool {
	e.gate.RLock()
	defer e.gate.RUnlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.pipeOut || e.err != nil {
		return false
	}
	if e.stage == nil {
		st, err := newStage()
		if err != nil {
			e.log.Warn("cannot stage block records; reading script output instead", "err", err)
			e.pipeOut = false
			return false
		}
		e.stage = st
	}
	if err := e.blocks(src, n); err != nil {
		e.fail(err)
	}
	return true
}

// blocks stages and sends n bytes of src as block records, a batch at a
// time. Called with mu held.
//
// One splice takes the batch out of the script's pipe, whose lock the
// script's own writes contend for; the blocks are cut from the intake pipe,
// which nobody else touches. The batch's headers are written to the header
// pipe in one write, where they share a page, and each is spliced into the
// staging pipe in front of its payload: a header written to the staging
// pipe itself would take a page of its own there.
func (e *emitter) blocks(src rawPipe, n int) error {
	st := e.stage
	// The held records go first, on their own: the header pipe is only
	// asked to hold a batch's headers (a pipe over the user's pipe limits
	// holds one page).
	e.writeHeld()
	if e.err != nil {
		return nil
	}
	hdrs := e.buf[:0]
	for n > 0 {
		k, err := spliceWaiting(src.fd, st.in.w, min(n, stageBlocks*e.enc.MaxBlock()))
		if err != nil {
			return err
		}
		n -= k
		st.cuts = st.cuts[:0]
		cut := 0
		for rest := k; rest > 0; {
			size := min(rest, e.enc.MaxBlock())
			e.mark(e.enc.Offset())
			hdrs = e.enc.AppendBlockHeader(hdrs, size)
			st.cuts = append(st.cuts, blockCut{header: len(hdrs) - cut, payload: size})
			cut = len(hdrs)
			hdrs = append(hdrs, '\n') // the block's end, before the next header
			rest -= size
		}
		if err := writeAll(st.hdr.w, hdrs); err != nil {
			return err
		}
		for _, c := range st.cuts {
			if err := e.stageFrom(st.hdr.r, c.header); err != nil {
				return err
			}
			if err := e.stageFrom(st.in.r, c.payload); err != nil {
				return err
			}
		}
		if err := e.stageFrom(st.hdr.r, 1); err != nil { // the last block's end
			return err
		}
		if err := e.sendStage(); err != nil {
			return err
		}
		hdrs = hdrs[:0]
	}
	e.buf = hdrs
	return nil
}

// blockCut is one block of a batch: its header's length in the header pipe
// (with the previous block's final newline in front of it) and its
// payload's in the intake pipe.
type blockCut struct{ header, payload int }

// writeAll writes b to the shim's own pipe fd, which has room for it.
func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		k, err := syscall.Write(fd, b)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return fmt.Errorf("stage block headers: %w", os.NewSyscallError("write", err))
		}
		b = b[k:]
	}
	return nil
}

// spliceWaiting moves up to n bytes waiting in the pipe from into the empty
// pipe to, as many as fit, and returns how many it moved (at least one).
func spliceWaiting(from, to, n int) (int, error) {
	for {
		k, err := syscall.Splice(from, nil, to, nil, n, spliceNonblock)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return 0, fmt.Errorf("take script output: %w", os.NewSyscallError("splice", err))
		case k <= 0:
			return 0, errors.New("take script output: the script's pipe holds fewer bytes than it reported")
		}
		return int(k), nil
	}
}

// stageFrom moves n bytes waiting in the pipe from into the staging pipe,
// sending what it holds first whenever it is full.
func (e *emitter) stageFrom(from, n int) error {
	st := e.stage
	for n > 0 {
		k, err := syscall.Splice(from, nil, st.out.w, nil, n, spliceNonblock)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN):
			if st.n == 0 {
				return errors.New("stage block records: a pipe holds fewer bytes than it should")
			}
			if err := e.sendStage(); err != nil {
				return err
			}
			continue
		case err != nil:
			return fmt.Errorf("stage script output: %w", os.NewSyscallError("splice", err))
		case k <= 0:
			return errors.New("stage script output: the intake pipe holds fewer bytes than it should")
		}
		st.n += int(k)
		n -= int(k)
	}
	return nil
}

// spliceNonblock is SPLICE_F_NONBLOCK.
const spliceNonblock = 0x2

// sendStage duplicates what the staging pipe holds into stdout (tee(2))
// and moves it into the replay store, emptying it.
//
// The kernel makes tee non-blocking because the staging pipe is, so a full
// stdout is waited for here, as a blocking write would.
func (e *emitter) sendStage() error {
	st := e.stage
	for st.n > 0 {
		k, err := syscall.Tee(st.out.r, e.outPipe.fd, st.n, 0)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN):
			if err := waitWritable(e.outPipe.fd); err != nil {
				return fmt.Errorf("write records to stdout: %w", err)
			}
			continue
		case err != nil:
			return fmt.Errorf("write records to stdout (tee): %w", err)
		case k <= 0:
			return fmt.Errorf("write records to stdout (tee): no progress with %d bytes staged", st.n)
		}
		if err := e.store.AppendFrom(st.out.r, int(k)); err != nil {
			return err
		}
		st.n -= int(k)
	}
	return nil
}

// waitWritable blocks until the pipe fd has room (or its reader is gone,
// which the next write reports).
func waitWritable(fd int) error {
	const pollOut = 0x4 // POLLOUT
	pfd := struct {
		fd             int32
		events, revent int16
	}{fd: int32(fd), events: pollOut}
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, 0, 0, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return os.NewSyscallError("ppoll", e)
		}
		return nil
	}
}
