package actions

import (
	"bytes"
	"fmt"
	"io"
	"time"
)

// logCursor turns pods/log output read with timestamps=true back into the
// container's bytes, and remembers how far it got, so a log read again
// after a broken connection (from the last line's second: sinceTime has
// whole seconds) writes nothing twice and loses nothing.
//
// The kubelet prefixes each line with its timestamp (RFC 3339, nanoseconds)
// and a space; the continuation of a line the runtime logged in parts
// carries none, and a last line without a newline ends the log without
// one. A line is known by its timestamp and its index among the lines of
// the same timestamp, which every read from an earlier second sees alike.
type logCursor struct {
	out io.Writer

	// What was written: the line (ts, idx) was the last one written to,
	// off of its bytes so far.
	wrote bool
	wTS   time.Time
	wIdx  int
	wOff  int

	// The read in progress: the header of a line being gathered, or the
	// line being passed through (ts, idx, off bytes of it seen).
	inLine bool
	header []byte
	ts     time.Time
	idx    int
	off    int
	prevTS time.Time
	prevN  int
}

// reset starts a new read of the log.
func (c *logCursor) reset() {
	c.inLine, c.header, c.off, c.prevTS, c.prevN = false, c.header[:0], 0, time.Time{}, 0
}

// since is the time to read the log again from: the second of the last
// line written to (zero before any).
func (c *logCursor) since() time.Time {
	if !c.wrote {
		return time.Time{}
	}
	return c.wTS.Truncate(time.Second)
}

// Write takes the next bytes of one read of the log.
func (c *logCursor) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if !c.inLine {
			i := bytes.IndexByte(p, ' ')
			if i < 0 {
				c.header = append(c.header, p...)
				if len(c.header) > 64 {
					return n - len(p), fmt.Errorf("the container's log has a line without a timestamp: %q", c.header)
				}
				return n, nil
			}
			c.header = append(c.header, p[:i]...)
			p = p[i+1:]
			ts, err := time.Parse(time.RFC3339Nano, string(c.header))
			if err != nil {
				return n - len(p), fmt.Errorf("the container's log has a line without a timestamp: %q", c.header)
			}
			c.header = c.header[:0]
			if ts.Equal(c.prevTS) {
				c.prevN++
			} else {
				c.prevTS, c.prevN = ts, 0
			}
			c.ts, c.idx, c.off, c.inLine = ts, c.prevN, 0, true
			continue
		}
		end := len(p)
		if i := bytes.IndexByte(p, '\n'); i >= 0 {
			end = i + 1
		}
		if err := c.pass(p[:end]); err != nil {
			return n - len(p), err
		}
		if p[end-1] == '\n' {
			c.inLine = false
		}
		p = p[end:]
	}
	return n, nil
}

// pass writes the part of a line's bytes b (at offset c.off of line
// (c.ts, c.idx)) that was not written before.
func (c *logCursor) pass(b []byte) error {
	start := c.off
	c.off += len(b)
	skip := 0
	switch cmp := c.compare(); {
	case cmp < 0:
		return nil // an earlier line: written before
	case cmp == 0:
		skip = max(0, c.wOff-start)
		if skip >= len(b) {
			return nil
		}
	default:
		c.wrote, c.wTS, c.wIdx, c.wOff = true, c.ts, c.idx, 0
	}
	w, err := c.out.Write(b[skip:])
	c.wOff += w
	if err != nil {
		return fmt.Errorf("write the step's output: %w", err)
	}
	return nil
}

// compare orders the line being read against the last one written to.
func (c *logCursor) compare() int {
	switch {
	case !c.wrote || c.ts.After(c.wTS):
		return 1
	case c.ts.Before(c.wTS):
		return -1
	case c.idx < c.wIdx:
		return -1
	case c.idx > c.wIdx:
		return 1
	}
	return 0
}
