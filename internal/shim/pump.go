package shim

import (
	"bytes"
	"errors"
	"io"
	"os"
	"time"
)

// pumpBufSize is the read size; big reads mean few records batches and few
// syscalls when a script prints a lot.
const pumpBufSize = 64 * 1024

// flushSize is how much of an unfinished line is held before it is sent
// anyway.
const flushSize = 16 * 1024

// pump forwards a script's output to the emitter until the output reaches
// EOF (every writer closed it) or fails (a pty returns EIO after the child
// exits). Complete lines go out as soon as they are read; an unfinished line
// waits up to delay for the rest of it, then goes out as it is.
func pump(f *os.File, em *emitter, delay time.Duration) {
	buf := make([]byte, pumpBufSize)
	held := 0             // buf[:held] is an unfinished line
	var flushAt time.Time // when the held bytes must go out
	deadlines := f.SetReadDeadline(time.Time{}) == nil
	deadlineSet := false
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
		n, err := f.Read(buf[held:])
		if n > 0 {
			data := buf[:held+n]
			last := bytes.LastIndexByte(data, '\n')
			switch {
			case !deadlines || held+n >= flushSize:
				em.Output(data)
				held = 0
			case last >= 0:
				em.Output(data[:last+1])
				held = copy(buf, data[last+1:])
				if held > 0 {
					flushAt = time.Now().Add(delay)
					deadlineSet = false
				}
			default:
				if held == 0 {
					flushAt = time.Now().Add(delay)
				}
				held += n
			}
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				em.Output(buf[:held])
				held = 0
				continue
			}
			// io.EOF, EIO from a pty, or the file closed by a drain timeout.
			if held > 0 {
				em.Output(buf[:held])
			}
			if !errors.Is(err, io.EOF) && !isPtyEOF(err) && !errors.Is(err, os.ErrClosed) {
				em.log.Warn("reading script output failed", "err", err)
			}
			return
		}
	}
}
