package cmdutil

import (
	"context"
	"sync"
)

// forceHooks are run before a forced exit.
type forceHooks struct {
	mu    sync.Mutex
	hooks map[int]func()
	next  int
}

type forceKey struct{}

// WithForceHooks returns ctx carrying a set of hooks for OnForce, and
// run, which runs them (the process's second signal, before it exits at
// once).
func WithForceHooks(parent context.Context) (ctx context.Context, run func()) {
	hooks := &forceHooks{hooks: map[int]func(){}}
	return context.WithValue(parent, forceKey{}, hooks), func() {
		hooks.mu.Lock()
		defer hooks.mu.Unlock()
		for _, fn := range hooks.hooks {
			fn()
		}
	}
}

// OnForce registers fn to run (quickly) before tether exits on a second
// signal. The returned function unregisters it. Without hooks in ctx
// (WithForceHooks) it does nothing.
func OnForce(ctx context.Context, fn func()) (remove func()) {
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
