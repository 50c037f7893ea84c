package gitlab

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"runtime"
	"time"

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

// agentTimerSlack is the timer slack of the agent's threads. The Go
// runtime's monitor thread (sysmon) sleeps 20 µs at a time while the
// process is busy: during a stage, hundreds of wake-ups, a fifth of the
// agent's CPU. With 1 ms of slack the kernel joins them to other
// wake-ups; the agent's own timers (request and stall deadlines, pings,
// the idle end) are seconds long and fire at most 1 ms late. Network
// and pipe events wake the agent as before: slack delays timers only.
const agentTimerSlack = time.Millisecond

// startDetached starts cmd, the agent, from a thread whose timer slack
// is agentTimerSlack: a process starts with its parent thread's slack,
// which exec keeps and every thread it creates inherits. The thread is
// set back to its own slack at once.
func startDetached(cmd *exec.Cmd) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	own, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		return cmd.Start()
	}
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(agentTimerSlack), 0, 0, 0); err != nil {
		return cmd.Start()
	}
	defer func() { _ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(own), 0, 0, 0) }()
	return cmd.Start()
}
