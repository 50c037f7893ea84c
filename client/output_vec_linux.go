package client

import (
	"errors"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// fileVectorWriter writes to a file (a terminal, a pipe, /dev/null) with
// writev(2).
type fileVectorWriter struct {
	rc syscall.RawConn
}

// vectorWriterFor returns a vectorWriter for w when w is a file, else nil.
func vectorWriterFor(w io.Writer) vectorWriter {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	return fileVectorWriter{rc: rc}
}

func (v fileVectorWriter) writeVec(bufs [][]byte) error {
	var werr error
	err := v.rc.Write(func(fd uintptr) bool {
		for len(bufs) > 0 {
			n, err := unix.Writev(int(fd), bufs)
			switch {
			case errors.Is(err, syscall.EINTR):
				continue
			case errors.Is(err, syscall.EAGAIN):
				return false // the runtime waits until fd is writable
			case err != nil:
				werr = os.NewSyscallError("writev", err)
				return true
			case n == 0:
				werr = io.ErrShortWrite
				return true
			}
			// Drop what was written, keeping the rest in order.
			for n > 0 {
				if n < len(bufs[0]) {
					bufs[0] = bufs[0][n:]
					break
				}
				n -= len(bufs[0])
				bufs = bufs[1:]
			}
		}
		return true
	})
	if werr != nil {
		return werr
	}
	return err
}
