package main

// Shared CLI helper: signal handling. main installs it for every
// subcommand, so the context each subcommand receives is cancelled by the
// first SIGINT/SIGTERM (context.Cause is a *signalError): a session then
// cancels its job gracefully. A second signal exits at once with 128+N,
// after running the hooks registered with cmdutil.OnForce (e.g. stop a
// local shim).

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/tether-ci/tether/internal/cmdutil"
)

// signalError is the cancellation cause after a signal.
type signalError struct{ sig os.Signal }

func (e *signalError) Error() string { return "received " + signalName(e.sig) }

// signalName returns "SIGINT" style names.
func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// signalContext returns a context cancelled by the first SIGINT or SIGTERM
// (with a *signalError cause, and a notice on stderr). A second signal runs
// the cmdutil.OnForce hooks and exits with 128+N. stop releases the signals.
func signalContext(parent context.Context, stderr io.Writer) (ctx context.Context, stop func()) {
	withHooks, runHooks := cmdutil.WithForceHooks(parent)
	ctx, cancel := context.WithCancelCause(withHooks)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		count := 0
		for {
			select {
			case <-done:
				return
			case sig := <-ch:
				count++
				if count == 1 {
					fmt.Fprintf(stderr, "tether: %s: cancelling the job (signal again to exit at once)\n", signalName(sig))
					cancel(&signalError{sig: sig})
					continue
				}
				fmt.Fprintf(stderr, "tether: %s again: exiting now\n", signalName(sig))
				runHooks()
				code := 128
				if s, ok := sig.(syscall.Signal); ok {
					code += int(s)
				}
				os.Exit(code)
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(context.Canceled)
	}
}
