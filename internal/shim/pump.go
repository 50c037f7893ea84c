package shim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// pumpBufSize is the first read size: enough for a script that prints
// little (most of them), and cheap to allocate per script.
const pumpBufSize = 32 * 1024

// pumpBigBufSize is the read size once a read filled the buffer (the
// script prints a lot): big reads mean few record batches and few
// syscalls.
const pumpBigBufSize = 256 * 1024

// flushSize is how much of an unfinished line is held before it is sent
// anyway.
const flushSize = 16 * 1024

// pipeSize is the kernel buffer asked for the script's output pipe and the
// shim's stdout: with the default 64 KiB a fast writer and its reader wake
// each other for every 64 KiB; 1 MiB (the unprivileged maximum,
// /proc/sys/fs/pipe-max-size) cuts those wake-ups and syscalls.
const pipeSize = 1 << 20

// fSetPipeSz is fcntl's F_SETPIPE_SZ (Linux).
const fSetPipeSz = 1031

// growPipe asks the kernel to give the pipe behind f a pipeSize buffer. It
// does nothing for a file that is not a pipe (a pty, a regular file) or
// when the kernel refuses (over the user's pipe-buffer limits): the pipe
// keeps the size it had, only the speed differs.
func growPipe(f *os.File) {
	sc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = sc.Control(func(fd uintptr) {
		var st syscall.Stat_t
		if syscall.Fstat(int(fd), &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
			return
		}
		_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, fSetPipeSz, pipeSize)
	})
}

// outStream is which of a script's output streams a pump forwards.
type outStream int

const (
	stdoutStream outStream = iota // stdout, with stderr unless that is apart
	stderrStream                  // stderr kept apart
)

// pump forwards a script's output to the emitter until the output reaches
// EOF (every writer closed it) or fails (a pty returns EIO after the child
// exits). Coalescing is adaptive: what a read returns goes out at once when
// the pipe holds nothing more, so a lone `printf .` reaches the client
// within a read's latency; only while more bytes are already waiting is an
// unfinished last line held back to be joined with them, for at most delay
// (the cap for a writer that never stops mid-line) or until it grew to
// flushSize. Complete lines never wait. With masked values, output passes
// through a maskStream first (see mask.go). Once a read fills the buffer, the
// buffer and the pipe grow for the rest of the output. When at least
// blockMin bytes wait in the pipe (and nothing is held, and no value is
// masked), they go out as block records that never pass through the shim's
// memory (emitter.Blocks).
//
// A script's stderr kept apart (stream stderrStream) goes out as stderr
// records, never as blocks.
func pump(f *os.File, em *emitter, delay time.Duration, masked *maskSet, stream outStream) {
	emit := em.Output
	if stream == stderrStream {
		emit = em.Stderr
	}
	if masked != nil {
		ms := &maskStream{set: masked, emit: emit}
		emit = ms.write
		defer ms.flush()
	}
	buf := make([]byte, pumpBufSize)
	held := 0             // buf[:held] is an unfinished line, shorter than flushSize
	var flushAt time.Time // when the held bytes must go out
	deadlines := f.SetReadDeadline(time.Time{}) == nil
	deadlineSet := false
	waiting := pendingBytes(f)
	src, blocks := pipeOf(f)
	grown := false
	blocks = blocks && masked == nil && deadlines && stream == stdoutStream
	// burst is set while bulk output flows: from a batch of block records
	// until the shim finds the pipe empty when it comes back for more.
	// What it reads in between (a writer's remainder, less than blockMin)
	// goes out as block records too, not a line record per line.
	burst := false
	for {
		if deadlines {
			switch {
			case held > 0 && !deadlineSet:
				_ = f.SetReadDeadline(flushAt)
				deadlineSet = true
			case held == 0 && deadlineSet:
				_ = f.SetReadDeadline(time.Time{})
				deadlineSet = false
			}
		}
		var n int
		var err error
		if blocks && held == 0 {
			var bulk int
			var waited bool
			n, bulk, waited, err = readOrMeasure(src, buf)
			if waited {
				burst = false
			}
			if bulk > 0 {
				burst = true
				if !grown {
					growPipe(f) // bulk output: fewer, bigger batches
					grown = true
				}
				if em.Blocks(src, bulk) {
					continue
				}
				blocks, burst = false, false // stdout is not a pipe: read from now on
				continue
			}
			if burst && n > 0 {
				em.OutputBlocks(buf[:n])
				n = 0
			}
		} else {
			n, err = f.Read(buf[held:])
		}
		if held+n == len(buf) && len(buf) < pumpBigBufSize {
			growPipe(f)
			buf = append(buf, make([]byte, pumpBigBufSize-len(buf))...)
		}
		if n > 0 {
			data := buf[:held+n]
			// Only the last flushSize bytes can hold a newline worth
			// waiting for: a longer unfinished line goes out anyway. This
			// bounds the backwards scan (LastIndexByte is bytewise).
			from := max(len(data)-flushSize, 0)
			last := bytes.LastIndexByte(data[from:], '\n')
			if last >= 0 {
				last += from
			}
			tail := len(data) - (last + 1)
			switch {
			case !deadlines || tail == 0 || tail >= flushSize || waiting() == 0:
				// Nothing unfinished, too much of it, or nothing more
				// to wait for: everything goes out now.
				emit(data)
				held = 0
			case last >= 0:
				emit(data[:last+1])
				held = copy(buf, data[last+1:])
				flushAt = time.Now().Add(delay)
				deadlineSet = false
			default:
				if held == 0 {
					flushAt = time.Now().Add(delay)
				}
				held += n
			}
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				emit(buf[:held])
				held = 0
				continue
			}
			// io.EOF, EIO from a pty, or the file closed by a drain timeout.
			if held > 0 {
				emit(buf[:held])
			}
			if !errors.Is(err, io.EOF) && !isPtyEOF(err) && !errors.Is(err, os.ErrClosed) {
				em.log.Warn("reading script output failed", "err", err)
			}
			return
		}
	}
}

// pendingBytes returns a function reporting how many bytes wait unread in
// the pipe or pty behind f (FIONREAD). Where that cannot be asked it
// reports 0, so output is never held back for bytes that may not come.
func pendingBytes(f *os.File) func() int {
	sc, err := f.SyscallConn()
	if err != nil {
		return func() int { return 0 }
	}
	return func() int {
		var n int32
		ok := false
		_ = sc.Control(func(fd uintptr) {
			_, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
			ok = e == 0
		})
		if !ok {
			return 0
		}
		return int(n)
	}
}

// readOrMeasure waits until the pipe src is readable, then either reports
// that at least blockMin bytes wait in it (bulk, nothing read) or reads
// into buf as os.File.Read would (n, io.EOF at the end, the deadline's
// error once it passed). waited reports that the pipe was empty when it
// was asked first.
func readOrMeasure(src rawPipe, buf []byte) (n, bulk int, waited bool, err error) {
	var rerr error
	calls := 0
	werr := src.rc.Read(func(fd uintptr) bool {
		calls++
		var waiting int32
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&waiting))); e == 0 && waiting >= blockMin {
			bulk = int(waiting)
			return true
		}
		for {
			n, rerr = syscall.Read(int(fd), buf)
			if !errors.Is(rerr, syscall.EINTR) {
				break
			}
		}
		return !errors.Is(rerr, syscall.EAGAIN)
	})
	waited = calls > 1
	switch {
	case errors.Is(werr, os.ErrDeadlineExceeded):
		return 0, 0, waited, werr
	case werr != nil:
		return 0, 0, waited, fmt.Errorf("%w: %w", os.ErrClosed, werr) // the only other way a wait ends
	case bulk > 0:
		return 0, bulk, waited, nil
	case rerr != nil:
		return 0, 0, waited, os.NewSyscallError("read", rerr)
	case n == 0:
		return 0, 0, waited, io.EOF
	}
	return n, 0, waited, nil
}
