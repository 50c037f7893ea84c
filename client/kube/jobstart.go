package kube

import (
	"sync"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/protocol"
)

// jobStartConn is the attach session a claimed pod's job starts on: it
// closes started once the shim's stream carries the job's first output,
// or any record past the shim's answers (resumed, hello, alive) and a
// script's begin (a status, an error, the job's end). Until then the
// shim is starting the job's first script, and on a small node every
// request beside it delays the job's first output.
//
// It reads the record types at each record's start (protocol/PROTOCOL.md
// section 2): the answers and a begin are one line each; anything else
// ends the scan, so a block record's raw bytes are never read as records.
type jobStartConn struct {
	client.Conn
	started chan struct{}

	mu      sync.Mutex
	done    bool // started is closed
	midLine bool // the last byte scanned was not a record's end
}

func (c *jobStartConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.scan(p[:n])
	}
	return n, err
}

// scan looks at the record starts in b, which follows what it scanned
// before.
func (c *jobStartConn) scan(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return
	}
	for _, x := range b {
		if !c.midLine {
			switch protocol.Type(x) {
			case protocol.TypeResumed, protocol.TypeHello, protocol.TypeAlive, protocol.TypeBegin:
			default:
				c.done = true
				close(c.started)
				return
			}
		}
		c.midLine = x != '\n'
	}
}
