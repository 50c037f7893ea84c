//go:build !linux

package local

import "syscall"

// shimProcAttr puts the shim into its own process group, which keeps a
// terminal's Ctrl-C away from it (the client cancels through the protocol).
// Only Linux can stop it when this process dies (Pdeathsig); tether-shim is
// a Linux program, so elsewhere this package only builds (tether for macOS
// runs jobs with --kube or --docker).
func shimProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
