package shim

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"github.com/creack/pty"
)

// openPty returns a pty pair whose slave is raw, so the script's bytes reach
// the client unchanged (no "\n" → "\r\n", no echo).
func openPty() (master, slave *os.File, err error) {
	master, slave, err = pty.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("open a pseudo-terminal for --tty: %w", err)
	}
	if err := makeRaw(slave.Fd()); err != nil {
		master.Close()
		slave.Close()
		return nil, nil, fmt.Errorf("make pseudo-terminal raw: %w", err)
	}
	_ = pty.Setsize(master, &pty.Winsize{Rows: 50, Cols: 200})
	return master, slave, nil
}

// makeRaw applies cfmakeraw(3) to the terminal fd, keeping output
// post-processing off so bytes pass through exactly.
func makeRaw(fd uintptr) error {
	var t syscall.Termios
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TCGETS, uintptr(unsafe.Pointer(&t))); e != 0 {
		return e
	}
	t.Iflag &^= syscall.IGNBRK | syscall.BRKINT | syscall.PARMRK | syscall.ISTRIP | syscall.INLCR | syscall.IGNCR | syscall.ICRNL | syscall.IXON
	t.Oflag &^= syscall.OPOST
	t.Lflag &^= syscall.ECHO | syscall.ECHONL | syscall.ICANON | syscall.ISIG | syscall.IEXTEN
	t.Cflag &^= syscall.CSIZE | syscall.PARENB
	t.Cflag |= syscall.CS8
	t.Cc[syscall.VMIN] = 1
	t.Cc[syscall.VTIME] = 0
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TCSETS, uintptr(unsafe.Pointer(&t))); e != 0 {
		return e
	}
	return nil
}

// isPtyEOF reports the EIO a pty master returns once every slave fd is
// closed: for a pty that is the end of output, not a failure.
func isPtyEOF(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe) && errors.Is(pe.Err, syscall.EIO)
}
