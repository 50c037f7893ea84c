package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether-ci/tether/internal/random"
	"github.com/tether-ci/tether/protocol"
)

// serveEnd is how serving one connection ended.
type serveEnd struct {
	err    error // why the connection ended; nil when the job or shim finished
	fatal  bool  // err must end the session (no reconnect)
	synced bool  // the shim answered the resume on this connection
}

// outMsg is one command line for the writer goroutine.
type outMsg struct {
	line []byte
	kind protocol.CommandKind
}

// connState is one connection being served.
type connState struct {
	conn  Conn
	nonce string

	sendq      chan outMsg
	stop       chan struct{}
	writerDone chan struct{}
	readerDone chan serveEnd
	jobDone    chan struct{} // closed when the job record arrived (ExitShim)

	lastRead atomic.Int64 // UnixNano of the last byte received
	synced   atomic.Bool

	// endNonce is the nonce of the resume that asks for the stream's end
	// (Options.FromEnd; "" when the end is known); jobGate says whether
	// the job went out after the answer (jobSent) or never will on this
	// connection (jobWithheld: cancelled before).
	endNonce string
	jobGate  atomic.Int32

	// pingMu guards pingNonce, the nonce of the ping sent on this
	// connection and not answered yet ("" when none is): a connection has
	// at most one ping in flight, so pings never queue up in the shim's
	// stdin ahead of a later connection's resume command when the shim
	// answers slowly (its answers wait for the output write in progress,
	// which a slow reader or link holds up).
	pingMu    sync.Mutex
	pingNonce string

	closeOnce sync.Once
	mu        sync.Mutex
	reason    error // why the session closed the connection itself
}

// States of connState.jobGate.
const (
	jobPending int32 = iota
	jobSent
	jobWithheld
)

// closeWith closes the connection once, remembering why.
func (c *connState) closeWith(reason error) {
	c.mu.Lock()
	if c.reason == nil {
		c.reason = reason
	}
	c.mu.Unlock()
	c.closeOnce.Do(func() { _ = c.conn.Close() })
}

// why returns the reason the session closed the connection, or err.
func (c *connState) why(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reason != nil {
		return c.reason
	}
	return err
}

// send queues a command without blocking and reports whether it did. A
// connection whose command queue is full is not making progress: it is
// closed (pings are dropped).
func (c *connState) send(cmd protocol.Command) bool {
	line, err := protocol.AppendCommand(nil, cmd)
	if err != nil {
		c.closeWith(fmt.Errorf("encode %s command: %w", cmd.Cmd, err))
		return false
	}
	select {
	case c.sendq <- outMsg{line: line, kind: cmd.Cmd}:
		return true
	default:
		if cmd.Cmd != protocol.CmdPing {
			c.closeWith(fmt.Errorf("the shim's stdin does not accept commands (%s command not sent)", cmd.Cmd))
		}
		return false
	}
}

// ping sends a ping unless this connection's previous ping is still
// unanswered.
func (c *connState) ping() {
	c.pingMu.Lock()
	defer c.pingMu.Unlock()
	if c.pingNonce != "" {
		return
	}
	nonce := random.Hex(4)
	if c.send(protocol.Command{Cmd: protocol.CmdPing, Nonce: nonce}) {
		c.pingNonce = nonce
	}
}

// pong notes the shim's answer to a ping: when it answers this
// connection's ping in flight, the next ping may go.
func (c *connState) pong(nonce string) {
	c.pingMu.Lock()
	defer c.pingMu.Unlock()
	if nonce != "" && nonce == c.pingNonce {
		c.pingNonce = ""
	}
}

// sendLines queues encoded command lines to go out in one write.
func (c *connState) sendLines(lines []byte, kind protocol.CommandKind) {
	select {
	case c.sendq <- outMsg{line: lines, kind: kind}:
	default:
		c.closeWith(fmt.Errorf("the shim's stdin does not accept commands (%s command not sent)", kind))
	}
}

// writeLoop writes queued commands to the connection. Commands queued
// together (a connection's resume and its job) go out in one write: one
// message through the API server, the kubelet and the container runtime
// to the shim, not one each.
func (c *connState) writeLoop() {
	defer close(c.writerDone)
	for {
		select {
		case <-c.stop:
			return
		case m := <-c.sendq:
			m = c.withQueued(m)
			if _, err := c.conn.Write(m.line); err != nil {
				c.closeWith(fmt.Errorf("send %s command: %w", m.kind, err))
				return
			}
		}
	}
}

// withQueued appends the commands queued after m to a copy of its line
// (a queued line may be the session's own, sent again on the next
// connection).
func (c *connState) withQueued(m outMsg) outMsg {
	for {
		select {
		case more := <-c.sendq:
			m.line = append(m.line[:len(m.line):len(m.line)], more.line...)
			m.kind += "+" + more.kind
		default:
			return m
		}
	}
}

// activityReader records when bytes arrive. (The decoder writes the output
// decoded so far before it reads: see read.)
type activityReader struct {
	st *stream
	c  *connState
}

func (r activityReader) Read(p []byte) (int, error) {
	n, err := r.c.conn.Read(p)
	if n > 0 {
		r.c.lastRead.Store(time.Now().UnixNano())
	}
	return n, err
}

// serve runs one connection: it resumes the stream, (re)sends the job and
// a pending cancel, pings, watches for stalls and ctx, and returns when the
// connection ended.
func (s *session) serve(ctx context.Context, conn Conn) serveEnd {
	c := &connState{
		conn:       conn,
		nonce:      random.Hex(16),
		sendq:      make(chan outMsg, 32),
		stop:       make(chan struct{}),
		writerDone: make(chan struct{}),
		readerDone: make(chan serveEnd, 1),
		jobDone:    make(chan struct{}),
	}
	start := time.Now()
	c.lastRead.Store(start.UnixNano())
	if s.st.findEnd {
		// A resume past any end: the answer is an error that names the
		// end, and the reader resumes from there and sends the job.
		c.endNonce = random.Hex(16)
		c.send(protocol.Command{Cmd: protocol.CmdResume, From: math.MaxInt64, Nonce: c.endNonce})
	} else {
		c.send(protocol.Command{Cmd: protocol.CmdResume, From: s.st.next, Nonce: c.nonce})
		if s.job != nil && !s.st.jobSeen {
			c.sendLines(s.jobLine, protocol.CmdJob)
			s.submitted = true
		}
	}
	if s.job == nil {
		// Attach: the answer says at once whether there is a job to follow.
		c.ping()
	}
	if s.cancelCause != nil {
		// Every connection repeats the cancel: one written to a connection
		// that then broke may never have reached the shim, and the shim
		// acts on a cancel ID once.
		c.send(s.cancelCommand())
	}
	go c.writeLoop()
	// From here until readerDone delivers, s.st is the reader's.
	st := s.st
	st.attempts = s.attempts
	go func() { c.readerDone <- st.read(c) }()

	tick := max(min(s.opts.PingInterval, s.opts.StallTimeout/4), 10*time.Millisecond)
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	lastPing := start
	ctxDone := ctx.Done()
	if s.cancelCause != nil {
		ctxDone = nil
	}
	var exitTimer <-chan time.Time
	jobDone := c.jobDone
	for {
		select {
		case end := <-c.readerDone:
			if end.err != nil && !end.fatal {
				end.err = c.why(end.err) // the session's own reason, if it closed the connection
			}
			if s.keep(c, end) {
				end.synced = true
				return end
			}
			c.closeWith(errors.New("connection finished"))
			close(c.stop)
			<-c.writerDone
			end.synced = c.synced.Load()
			if c.jobGate.Load() == jobSent {
				s.submitted = true
			}
			return end
		case now := <-ticker.C:
			idle := now.Sub(time.Unix(0, c.lastRead.Load()))
			switch {
			case idle >= s.opts.StallTimeout:
				c.closeWith(fmt.Errorf("connection stalled: nothing received for %s", idle.Round(time.Millisecond)))
			case !c.synced.Load() && now.Sub(start) >= s.opts.StallTimeout:
				c.closeWith(fmt.Errorf("the shim did not answer the resume command within %s", s.opts.StallTimeout))
			case now.Sub(lastPing) >= s.opts.PingInterval:
				lastPing = now
				c.ping()
			}
		case <-ctxDone:
			ctxDone = nil
			s.noteCancel(ctx)
			if c.endNonce != "" && c.jobGate.CompareAndSwap(jobPending, jobWithheld) {
				// The job has not gone out and never will.
				c.closeWith(fmt.Errorf("job not submitted: %w", s.cancelCause))
				continue
			}
			c.send(s.cancelCommand())
		case <-s.cancelExpired():
			c.closeWith(errors.New("cancel timeout"))
		case <-jobDone:
			jobDone = nil
			exitTimer = time.After(exitWait)
		case <-exitTimer:
			c.closeWith(fmt.Errorf("no final record within %s of the exit command", exitWait))
		}
	}
}

// keep hands the connection to Options.KeepConn when the session ends
// with its job's record on it, still open: the writer is stopped first
// (a command it was writing goes out whole), so the session holds no part
// of it any more. It reports whether it did.
func (s *session) keep(c *connState, end serveEnd) bool {
	if s.opts.KeepConn == nil || end.err != nil || !s.st.jobDone || s.st.exitShim || c.why(nil) != nil {
		return false
	}
	close(c.stop)
	<-c.writerDone
	if c.why(nil) != nil {
		c.closeWith(errors.New("connection finished")) // the writer failed meanwhile
		return false
	}
	s.opts.KeepConn(c.conn)
	return true
}

func (s *session) cancelCommand() protocol.Command {
	return protocol.Command{Cmd: protocol.CmdCancel, ID: s.cancelID, GraceMS: s.opts.CancelGrace.Milliseconds()}
}
