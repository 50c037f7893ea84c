package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/protocol"
)

// fakeShim is an in-process stand-in for tether-shim that speaks the
// protocol through the protocol package's encoder. It exists for the
// session's edge cases a real shim never produces on purpose (corrupt
// replays, duplicate records, an unknown record type); behaviour tests use
// the real shim through client/local.
type fakeShim struct {
	t *testing.T

	// away is held while the fake writes records "while disconnected"
	// (cutAway): Connect waits for it.
	away sync.Mutex

	mu       sync.Mutex
	enc      *protocol.Encoder
	stream   []byte  // every sequenced record
	offsets  []int64 // start offset of each record in stream
	conn     *fakeConn
	cmds     []protocol.Command
	jobsRun  map[string]bool
	connects int

	// Hooks and knobs, set before use.
	hello       *protocol.Hello                                        // nil: a valid hello
	prefix      func(n int) []byte                                     // bytes written first on connection n (1-based)
	replayStart func(from, end int64, offsets []int64) (int64, string) // where a replay starts, or an error (called with mu held)
	onJob       func(f *fakeShim, c protocol.Command)                  // runs the job (default: nothing)
	onCommand   func(f *fakeShim, c protocol.Command) bool             // return true to swallow a command
	connectErr  func(n int) error                                      // error for connection attempt n
	silent      bool                                                   // answer nothing (not even pings)
}

func newFakeShim(t *testing.T) *fakeShim {
	f := &fakeShim{t: t, enc: protocol.NewEncoder(), jobsRun: map[string]bool{}}
	return f
}

// start writes the hello record (before any connection, like a real shim).
func (f *fakeShim) start() *fakeShim {
	h := protocol.Hello{Protocol: protocol.Version, Shim: "fake", MaxRecord: protocol.MaxRecord, Replay: "file"}
	if f.hello != nil {
		h = *f.hello
	}
	f.record(protocol.TypeHello, h)
	return f
}

func (f *fakeShim) Connect(ctx context.Context) (client.Conn, error) {
	f.away.Lock() // not while cutAway writes
	defer f.away.Unlock()
	f.mu.Lock()
	f.connects++
	n := f.connects
	hook := f.connectErr
	f.mu.Unlock()
	if hook != nil {
		if err := hook(n); err != nil {
			return nil, err
		}
	}
	toClientR, toClientW := io.Pipe()
	toShimR, toShimW := io.Pipe()
	c := &fakeConn{r: toClientR, w: toShimW, f: f, closeR: toShimR, closeW: toClientW, prefixed: make(chan struct{})}
	f.mu.Lock()
	old := f.conn
	f.conn = c
	f.mu.Unlock()
	if old != nil {
		old.shut(false)
	}
	go f.serveCommands(c, toShimR)
	go func() {
		defer close(c.prefixed)
		if f.prefix == nil {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.conn == c {
			_, _ = toClientW.Write(f.prefix(n))
		}
	}()
	return c, nil
}

// cutAway breaks the current connection and runs write (records written
// while disconnected) before the client can connect again: however fast it
// reconnects, they are not sent live.
func (f *fakeShim) cutAway(write func()) {
	f.away.Lock()
	defer f.away.Unlock()
	f.cut()
	write()
}

// cut breaks the current connection.
func (f *fakeShim) cut() {
	f.mu.Lock()
	c := f.conn
	f.conn = nil
	f.mu.Unlock()
	if c != nil {
		c.shut(false)
	}
}

func (f *fakeShim) serveCommands(c *fakeConn, r io.Reader) {
	cr := protocol.NewCommandReader(r)
	for {
		cmd, err := cr.Next()
		if err != nil {
			var ce *protocol.CommandError
			if errors.As(err, &ce) {
				continue
			}
			return
		}
		f.mu.Lock()
		f.cmds = append(f.cmds, cmd)
		swallow := f.onCommand != nil && f.onCommand(f, cmd)
		silent := f.silent
		f.mu.Unlock()
		if swallow || silent {
			continue
		}
		switch cmd.Cmd {
		case protocol.CmdResume:
			f.resume(c, cmd)
		case protocol.CmdPing:
			f.unsequenced(c, protocol.TypeAlive, protocol.Alive{Nonce: cmd.Nonce, State: "running"})
		case protocol.CmdJob:
			f.mu.Lock()
			seen := f.jobsRun[cmd.ID]
			f.jobsRun[cmd.ID] = true
			f.mu.Unlock()
			if !seen && f.onJob != nil {
				f.onJob(f, cmd)
			}
		}
	}
}

func (f *fakeShim) resume(c *fakeConn, cmd protocol.Command) {
	<-c.prefixed // a connection's garbage comes before any answer
	f.mu.Lock()
	defer f.mu.Unlock()
	end := f.enc.Offset()
	from, errText := cmd.From, ""
	if f.replayStart != nil {
		from, errText = f.replayStart(cmd.From, end, f.offsets)
	}
	if errText == "" && (from < 0 || from > end) {
		errText = fmt.Sprintf("offset %d outside [0, %d]", from, end)
	}
	ans := protocol.Resumed{Nonce: cmd.Nonce, From: from, End: end, Error: errText}
	b, _ := protocol.AppendUnsequenced(nil, protocol.TypeResumed, ans)
	if errText == "" {
		b = append(b, f.stream[from:end]...)
	}
	if f.conn == c {
		_, _ = c.closeW.Write(b)
	}
}

func (f *fakeShim) unsequenced(c *fakeConn, t protocol.Type, v any) {
	b, _ := protocol.AppendUnsequenced(nil, t, v)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn == c {
		_, _ = c.closeW.Write(b)
	}
}

// record appends a sequenced JSON record and sends it live.
func (f *fakeShim) record(t protocol.Type, v any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	start := f.enc.Offset()
	b, err := f.enc.AppendJSON(nil, t, v)
	if err != nil {
		f.t.Errorf("fake shim: %v", err)
		return
	}
	f.appendLocked(start, b)
}

// output appends output records and sends them live.
func (f *fakeShim) output(data string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, line := range splitKeep(data) {
		start := f.enc.Offset()
		f.appendLocked(start, f.enc.AppendOutput(nil, []byte(line)))
	}
}

// batch runs add, which appends records with the ...Locked methods, and
// sends what they appended live in one write.
func (f *fakeShim) batch(add func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.conn
	f.conn = nil // appendLocked keeps the records for the one write below
	from := len(f.stream)
	add()
	f.conn = c
	if c != nil {
		_, _ = c.closeW.Write(f.stream[from:])
	}
}

// blocksLocked appends data as block records. Called with mu held.
func (f *fakeShim) blocksLocked(data []byte) {
	f.appendLocked(f.enc.Offset(), f.enc.AppendBlocks(nil, data))
}

// outputLocked appends one output line. Called with mu held.
func (f *fakeShim) outputLocked(line string) {
	f.appendLocked(f.enc.Offset(), f.enc.AppendOutput(nil, []byte(line)))
}

// blocks writes data as block records, the way the shim sends bulk output.
func (f *fakeShim) blocks(data string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	start := f.enc.Offset()
	f.appendLocked(start, f.enc.AppendBlocks(nil, []byte(data)))
}

// raw appends an arbitrary sequenced line (e.g. an unknown record type).
func (f *fakeShim) raw(line string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// The encoder does not count raw lines: they must come last.
	f.appendLocked(f.enc.Offset(), []byte(line))
}

func (f *fakeShim) appendLocked(start int64, b []byte) {
	f.offsets = append(f.offsets, start)
	f.stream = append(f.stream, b...)
	if f.conn != nil {
		_, _ = f.conn.closeW.Write(b)
	}
}

// commands returns the commands of kind k received so far.
func (f *fakeShim) commands(k protocol.CommandKind) []protocol.Command {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []protocol.Command
	for _, c := range f.cmds {
		if c.Cmd == k {
			out = append(out, c)
		}
	}
	return out
}

// splitKeep splits s after each newline.
func splitKeep(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		if i < len(s) {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// finishJob writes a job's begin, output, status and job records.
func finishJob(f *fakeShim, c protocol.Command, output string, code int) {
	script := c.Scripts[0]
	f.record(protocol.TypeBegin, protocol.Begin{Script: script, Phase: "script", Job: c.ID})
	f.output(output)
	f.record(protocol.TypeStatus, protocol.Status{Script: script, CommandExitCode: code, Phase: "script", Job: c.ID})
	jd := protocol.JobDone{ExitCode: code, Job: c.ID}
	if code != 0 {
		jd.FailedScript = script
	}
	f.record(protocol.TypeJob, jd)
}

type fakeConn struct {
	f      *fakeShim
	r      *io.PipeReader // client reads
	w      *io.PipeWriter // client writes
	closeR *io.PipeReader // the shim side of w
	closeW *io.PipeWriter // the shim side of r

	prefixed chan struct{} // closed once the prefix was written

	once sync.Once
}

func (c *fakeConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *fakeConn) Write(p []byte) (int, error) { return c.w.Write(p) }

// Close is the client closing its connection.
func (c *fakeConn) Close() error {
	c.shut(true)
	return nil
}

// shut breaks the connection: from the client's side (Close), or from the
// network's (cut), where the client's Read sees the fake's error.
func (c *fakeConn) shut(client bool) {
	c.once.Do(func() {
		// Pipes first: a fake writer blocked on them holds f.mu.
		err := fmt.Errorf("fake connection closed")
		c.closeW.CloseWithError(err)
		c.closeR.CloseWithError(err)
		if client {
			c.r.CloseWithError(err)
			c.w.CloseWithError(err)
		}
		c.f.mu.Lock()
		if c.f.conn == c {
			c.f.conn = nil
		}
		c.f.mu.Unlock()
	})
}
