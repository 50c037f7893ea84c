package local

import (
	"errors"
	"io"
	"os"
	"syscall"
	"unsafe"
)

// maxRead caps one read(2), as os.File.Read does for streams.
const maxRead = 1 << 30

// nonblockingReader reads a non-blocking file registered with Go's poller
// (an os.Pipe end, as the shim's stdout is here) the way os.File.Read does:
// it waits in the poller and honours read deadlines, with the same errors
// (os.ErrDeadlineExceeded, io.EOF, os.ErrClosed). Only read(2) itself is
// issued as a raw system call. A read of a non-blocking descriptor cannot
// block, so it needs none of the runtime's system-call bookkeeping, whose
// first call after an idle spell also wakes the runtime's monitor thread,
// which then polls every 20 µs while the process works. A session wakes
// once per batch of records (once per script for a job of short scripts);
// that bookkeeping and the monitor's polling were about half of its CPU.
type nonblockingReader struct {
	f  *os.File
	rc syscall.RawConn
}

// newNonblockingReader returns a reader of f, or f itself where its
// descriptor cannot be reached.
func newNonblockingReader(f *os.File) io.Reader {
	rc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	return nonblockingReader{f: f, rc: rc}
}

// Read reads up to len(p) bytes once some are available.
func (r nonblockingReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	p = p[:min(len(p), maxRead)]
	var n int
	var errno syscall.Errno
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			r1, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // nothing yet: wait in the poller
			}
			n, errno = int(r1), e
			return true
		}
	})
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return 0, &os.PathError{Op: "read", Path: r.f.Name(), Err: os.ErrDeadlineExceeded}
	case err != nil:
		// The poller's other errors: the file was closed (or is not
		// pollable, which a pipe end always is).
		return 0, &os.PathError{Op: "read", Path: r.f.Name(), Err: os.ErrClosed}
	case errno != 0:
		return 0, &os.PathError{Op: "read", Path: r.f.Name(), Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}
