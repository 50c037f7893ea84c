package shim

import (
	"errors"
	"sync"
	"syscall"
)

// oomCounter reads a memory cgroup's OOM-kill counter before and after
// every script. It keeps the counter file open and reads it with one
// pread: opening, reading and closing it per script cost nine system
// calls, and the file, opened through os, was registered with Go's poller,
// whose first readiness event woke an idle thread for nothing. The file
// stays open for the shim's life (close-on-exec: scripts never see it).
type oomCounter struct {
	cg memCgroup

	mu sync.Mutex // guards fd: a script's status and the next start may read at once
	fd int        // the open counter file, -1 until it could be opened
}

// newOOMCounter returns a counter for cg; nothing is opened yet.
func newOOMCounter(cg memCgroup) *oomCounter {
	return &oomCounter{cg: cg, fd: -1}
}

// read returns the OOM-kill counter, ok false when it cannot be read (no
// memory cgroup, or its file is missing: it is looked for again next
// time).
func (c *oomCounter) read() (uint64, bool) {
	if c.cg.dir == "" {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		fd, err := syscall.Open(c.cg.counterPath(), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return 0, false
		}
		c.fd = fd
	}
	// memory.events is about 120 bytes, memory.oom_control about 50.
	var buf [512]byte
	for {
		n, err := syscall.Pread(c.fd, buf[:], 0)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			return 0, false
		}
		return parseOOMKills(buf[:n])
	}
}

// limit returns the cgroup's memory limit in bytes, 0 when none or unknown.
func (c *oomCounter) limit() int64 { return c.cg.limit() }
