package local

import "syscall"

// shimProcAttr puts the shim into its own process group, which keeps a
// terminal's Ctrl-C away from it (the client cancels through the protocol),
// and has the kernel stop it (and so its scripts) with SIGTERM if this
// process dies without closing it.
func shimProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
