// Package reaper is the one owner of wait4(-1) in tether-shim.
//
// As PID 1 (or a child subreaper) the shim inherits every orphan in its
// container and must reap them all, but it also needs the exit status of the
// scripts it starts. If two parts of a program both wait, one steals the
// other's status. So nothing else may wait: processes are started through
// Reaper.Start, which registers the child before its exit can be dispatched,
// and every other exit (orphans of any depth) is reaped and dropped.
package reaper

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Exit is a reaped child's pid and wait status.
type Exit struct {
	// Pid is the child's process ID.
	Pid int
	// Status is the raw wait status.
	Status syscall.WaitStatus
}

// Reaper reaps every child of the process and delivers the exits of the
// children started through it.
type Reaper struct {
	mu     sync.Mutex
	subs   map[int]chan Exit
	sigs   chan os.Signal
	reaped func(Exit) // test hook: called for every reaped child
}

// New returns a reaper that is already listening for SIGCHLD, so no exit can
// be missed between New and Run.
func New() *Reaper {
	r := &Reaper{subs: make(map[int]chan Exit), sigs: make(chan os.Signal, 1)}
	signal.Notify(r.sigs, syscall.SIGCHLD)
	return r
}

// Run reaps children until ctx ends. Call it once, in its own goroutine.
func (r *Reaper) Run(ctx context.Context) {
	defer signal.Stop(r.sigs)
	r.reapAll() // children that exited before Run started
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.sigs:
			r.reapAll()
		}
	}
}

// reapAll waits for every child that has exited, without blocking.
func (r *Reaper) reapAll() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		r.dispatch(Exit{Pid: pid, Status: ws})
	}
}

func (r *Reaper) dispatch(e Exit) {
	r.mu.Lock()
	ch, ok := r.subs[e.Pid]
	delete(r.subs, e.Pid)
	hook := r.reaped
	r.mu.Unlock()
	if ok {
		ch <- e // buffered, never blocks
	}
	if hook != nil {
		hook(e)
	}
}

// Start runs start, which must create exactly one child process and return
// its pid, and returns a channel that receives the child's exit. The child
// is registered before the reaper can dispatch its exit, so even a child
// that exits at once is never missed.
func (r *Reaper) Start(start func() (int, error)) (int, <-chan Exit, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pid, err := start()
	if err != nil {
		return 0, nil, err
	}
	ch := make(chan Exit, 1)
	r.subs[pid] = ch
	return pid, ch, nil
}
