package stage

import (
	"io"
	"syscall"
	"time"
)

// sock is a stage process's connection to its agent: a unix socket in
// blocking mode, read and written with plain system calls on the calling
// goroutine. Unlike a net.Conn it needs no poller, no thread of the
// runtime's for it and no goroutine hand-off per frame.
type sock struct{ fd int }

// dialUnix connects to the unix socket at path, giving up after timeout
// when the listener's queue stays full.
func dialUnix(path string, timeout time.Duration) (*sock, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil, err
	}
	syscall.CloseOnExec(fd)
	// A blocking connect to a unix socket waits while the listener's
	// queue is full, as long as the send timeout lets it.
	tv := syscall.NsecToTimeval(timeout.Nanoseconds())
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv); err != nil {
		_ = syscall.Close(fd)
		return nil, err
	}
	if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		_ = syscall.Close(fd)
		return nil, err
	}
	// Writes wait as long as the agent needs to read them.
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &syscall.Timeval{}); err != nil {
		_ = syscall.Close(fd)
		return nil, err
	}
	return &sock{fd: fd}, nil
}

// Read reads into p; the end of the stream is io.EOF.
func (s *sock) Read(p []byte) (int, error) {
	for {
		n, err := syscall.Read(s.fd, p)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// Write writes all of p.
func (s *sock) Write(p []byte) (int, error) {
	written := 0
	for written < len(p) {
		n, err := syscall.Write(s.fd, p[written:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return written, err
		}
		written += n
	}
	return written, nil
}

// shutdown ends both directions: a Read blocked on the socket returns
// io.EOF, and the agent sees the stage process gone.
func (s *sock) shutdown() {
	_ = syscall.Shutdown(s.fd, syscall.SHUT_RDWR)
}

// Close closes the socket.
func (s *sock) Close() error {
	return syscall.Close(s.fd)
}
