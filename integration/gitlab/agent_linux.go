package gitlab

import (
	"context"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// agentSupported: the agent needs the kernel's peer credentials and
// process file descriptors.
const agentSupported = true

// peerUID is the user ID of the process at c's other end.
func peerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, cerr
	}
	return int(cred.Uid), nil
}

// watchRunner calls gone once the process pid ends (or ctx ends first,
// without calling it). It follows the process through a pidfd, so a
// later process with the same ID is never mistaken for it.
func watchRunner(ctx context.Context, pid int, gone func()) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return fmt.Errorf("open the runner's process %d: %w", pid, err)
	}
	go func() {
		defer unix.Close(fd)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for ctx.Err() == nil {
			// A second at a time: the goroutine ends soon after ctx.
			n, err := unix.Poll(fds, 1000)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return
			}
			if n > 0 {
				gone()
				return
			}
		}
	}()
	return nil
}
