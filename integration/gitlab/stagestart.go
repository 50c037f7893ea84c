package gitlab

import (
	"bytes"
	"io"
	"math"
	"sync"
	"sync/atomic"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/protocol"
)

// stageStart says where a stage's records start in its shim's stream.
type stageStart struct {
	// resume: the stage's job was begun by the stage agent, whose process
	// is gone; its records start at from.
	resume bool
	from   int64
	// started, for a new stage, is told the stage's job ID and the offset
	// its records start at, before the job can reach the shim.
	started func(job string, from int64)
	// spare, for a new stage, is an attach to its container the stage
	// agent kept (or opened) before the stage came: the session's first
	// connection.
	spare client.Conn
	// end, when endKnown, is the end of the shim's stream on spare (the
	// previous stage's session ended there and nothing came since): the
	// stage's records start there, with no question to the shim.
	end      int64
	endKnown bool
	// adopt, when set, wraps the connections the stage opens itself so
	// that the agent can keep them (spareSet.adopt).
	adopt func(client.Conn) client.Conn
	// clock, when set, times the stage's first write and first bytes
	// back.
	clock *stageClock
}

// startTap finds where a new stage's records start: the offset of the
// session's first resume command after the one that asks for the
// stream's end (protocol/PROTOCOL.md), which the session writes before
// its job command.
type startTap struct {
	once  sync.Once
	done  atomic.Bool
	found func(from int64)
}

// see reads one command line the session wrote.
func (t *startTap) see(line []byte) {
	line = bytes.TrimLeft(line, string(rune(protocol.Reset)))
	// Only a resume command is parsed: the job's other command lines
	// (its files, base64 in JSON, the job itself) are most of what a
	// stage writes, and none of them holds the quoted word.
	if len(line) == 0 || line[0] != '{' || !bytes.Contains(line, []byte(quotedResume)) {
		return
	}
	cmd, err := protocol.ParseCommand(line)
	if err == nil && cmd.Cmd == protocol.CmdResume && cmd.From != math.MaxInt64 {
		t.once.Do(func() {
			t.found(cmd.From)
			t.done.Store(true)
		})
	}
}

// quotedResume is in every resume command line (its "cmd" value).
const quotedResume = `"` + string(protocol.CmdResume) + `"`

// tappedConn shows its tap every command line written to the shim before
// the line goes out.
type tappedConn struct {
	client.Conn
	tap     *startTap
	partial []byte
}

func (c *tappedConn) Write(p []byte) (int, error) {
	if c.tap.done.Load() {
		return c.Conn.Write(p)
	}
	c.partial = append(c.partial, p...)
	for !c.tap.done.Load() {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			break
		}
		c.tap.see(c.partial[:i])
		c.partial = c.partial[i+1:]
	}
	if c.tap.done.Load() {
		c.partial = nil // the tap has what it wanted
	}
	if len(c.partial) > 64<<10 {
		c.partial = nil // not a command line
	}
	return c.Conn.Write(p)
}

// skipWriter drops the first n bytes written to it: the stdout a stage's
// process wrote while its agent ran the stage.
type skipWriter struct {
	w io.Writer
	n int64
}

func (s *skipWriter) Write(p []byte) (int, error) {
	if s.n >= int64(len(p)) {
		s.n -= int64(len(p))
		return len(p), nil
	}
	skip := s.n
	s.n = 0
	n, err := s.w.Write(p[skip:])
	return int(skip) + n, err
}
