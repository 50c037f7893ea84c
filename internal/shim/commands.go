package shim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// openCommands opens the FIFO given with --commands, creating it if needed.
// It is opened read-write, so writers may come and go (one per connection of
// an engine that closes a container's stdin when an attach ends, like
// podman) without the shim ever reading EOF.
func openCommands(path string) (*os.File, error) {
	if err := syscall.Mkfifo(path, 0o600); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("create command FIFO %s: %w", path, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("command FIFO %s: %w", path, err)
	}
	if fi.Mode()&os.ModeNamedPipe == 0 {
		return nil, fmt.Errorf("--commands %s is not a FIFO", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open command FIFO %s: %w", path, err)
	}
	return f, nil
}

// fifoWait bounds how long `tether-shim send` waits for the FIFO to appear.
const fifoWait = 10 * time.Second

// sendCommands copies command lines from in to the FIFO at path, one write
// per line, so a client can feed a shim's --commands FIFO through an exec
// session in an image that has no shell (`tether-shim send PATH`).
// A FIFO that does not exist yet (the shim is still starting) is waited
// for up to fifoWait.
func sendCommands(in io.Reader, path string) error {
	var f *os.File
	var err error
	for waited := time.Duration(0); ; waited += 50 * time.Millisecond {
		f, err = os.OpenFile(path, os.O_WRONLY, 0)
		if err == nil || !errors.Is(err, os.ErrNotExist) || waited >= fifoWait {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("open command FIFO %s (is the shim running with --commands %s?): %w", path, path, err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(in, 64*1024)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && err == nil {
			if _, werr := f.Write(line); werr != nil {
				return fmt.Errorf("write command FIFO %s: %w", path, werr)
			}
		}
		if errors.Is(err, io.EOF) {
			// A final line without a newline is a torn command: dropped here
			// rather than left for the next writer to complete.
			return nil
		}
		if err != nil {
			return fmt.Errorf("read commands: %w", err)
		}
	}
}
