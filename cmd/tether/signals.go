package main

// Shared CLI helper: signal handling. main installs it for every
// subcommand, so the context each subcommand receives is cancelled by the
// first SIGINT/SIGTERM (context.Cause is a *signalError): a session then
// cancels its job gracefully. A second signal exits at once with 128+N,
// after running the hooks registered with onForce (e.g. stop a local shim).

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
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

// forceHooks are run before a forced exit.
type forceHooks struct {
	mu    sync.Mutex
	hooks map[int]func()
	next  int
}

type forceKey struct{}

// onForce registers fn to run (quickly) before tether exits on a second
// signal. The returned function unregisters it.
func onForce(ctx context.Context, fn func()) (remove func()) {
	h, ok := ctx.Value(forceKey{}).(*forceHooks)
	if !ok {
		return func() {}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	id := h.next
	h.next++
	h.hooks[id] = fn
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.hooks, id)
	}
}

// signalContext returns a context cancelled by the first SIGINT or SIGTERM
// (with a *signalError cause, and a notice on stderr). A second signal runs
// the onForce hooks and exits with 128+N. stop releases the signals.
func signalContext(parent context.Context, stderr io.Writer) (ctx context.Context, stop func()) {
	hooks := &forceHooks{hooks: map[int]func(){}}
	ctx, cancel := context.WithCancelCause(context.WithValue(parent, forceKey{}, hooks))
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
				hooks.mu.Lock()
				for _, fn := range hooks.hooks {
					fn()
				}
				hooks.mu.Unlock()
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
