//go:build !linux

package gitlab

import (
	"context"
	"errors"
	"net"
	"os/exec"
)

// agentSupported: the agent is Linux's only (peer credentials, pidfds);
// elsewhere every stage runs `tether gitlab run`.
const agentSupported = false

var errNoAgent = errors.New("the stage agent runs on Linux only")

func peerUID(*net.UnixConn) (int, error) { return 0, errNoAgent }

func watchRunner(context.Context, int, func()) error { return errNoAgent }

func startDetached(cmd *exec.Cmd) error { return cmd.Start() }
