package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tether-ci/tether/protocol"
)

// stderrVersion is the first protocol version with stderr records.
const stderrVersion = 3

// flushAt is how much decoded output is held before it is written to
// Options.Output even though more is already buffered (the reader also
// writes it before every read that may block).
const flushAt = 256 << 10

// keepPending is the capacity of the pending-output buffer a session keeps
// however slow its output: a bigger buffer is kept only while the writes
// fill a good part of it.
const keepPending = 16 << 10

// releaseAfter is how many small writes in a row release a big
// pending-output buffer. A fast stream's writes alternate between big ones
// and small ones (whatever one read brought), so releasing it after a single
// small write would make every burst grow it again from nothing.
const releaseAfter = 32

// read decodes one connection's records until the connection ends, the job
// finishes, or something fatal happens.
func (s *stream) read(c *connState) serveEnd {
	dec := protocol.NewDecoder(activityReader{st: s, c: c})
	// Queued block payloads live in the decoder's buffer: they are written
	// before it reads (or moves what it holds), so output reaches the
	// caller in one write per chunk received, never later than the chunk
	// after it.
	dec.BeforeFill(s.flush)
	dec.Resync(!c.synced.Load()) // a connection starts anywhere, even inside a block
	for {
		if c.synced.Load() {
			// The bulk of a stream: plain output records in order, taken
			// straight from the decoder's buffer.
			if pending, next := dec.AppendOutput(s.pending, s.next); next != s.next {
				s.pending, s.next, s.gaps = pending, next, 0
				if len(s.pending) >= flushAt {
					if err := s.flush(); err != nil {
						return s.fatalOutput()
					}
				}
			}
		}
		rec, err := dec.Next()
		if s.outErr != nil {
			return s.fatalOutput()
		}
		if err != nil {
			if !c.synced.Load() && errors.Is(err, protocol.ErrMalformed) {
				continue // a reconnect starts anywhere, even inside a record
			}
			if errors.Is(err, protocol.ErrUnknownType) {
				return serveEnd{fatal: true, err: fmt.Errorf("at offset %d: %w", s.next, err)}
			}
			if errors.Is(err, protocol.ErrMalformed) {
				return serveEnd{fatal: true, err: fmt.Errorf("corrupt record stream at offset %d: %w", s.next, err)}
			}
			if errors.Is(err, io.EOF) {
				err = errors.New("the shim's output ended")
			}
			return s.endRead(serveEnd{err: err})
		}
		if !c.synced.Load() {
			if end, ok := s.sync(c, rec); ok {
				return end
			}
			dec.Resync(!c.synced.Load()) // records are framed from the resume answer on
			continue
		}
		if !rec.Type.Sequenced() {
			if rec.Type == protocol.TypeAlive {
				if end, done := s.alive(c, rec); done {
					return s.endRead(end)
				}
			}
			continue // stale resume answers
		}
		switch {
		case rec.Seq < s.next:
			continue // already received before a reconnect
		case rec.Seq > s.next:
			s.gaps++
			err := fmt.Errorf("records skipped: expected offset %d, got %d", s.next, rec.Seq)
			if s.gaps >= maxGaps {
				return serveEnd{fatal: true, err: fmt.Errorf("%w: %w", ErrNoResult, err)}
			}
			return serveEnd{err: err}
		}
		s.gaps = 0
		s.next = rec.Next()
		if rec.Type == protocol.TypeBlock && len(rec.Payload) >= protocol.DirectOutput {
			// Bulk output goes out from the decoder's buffer, not copied,
			// with the other blocks of the same read.
			if s.queueDirect(rec.Payload) != nil {
				return s.fatalOutput()
			}
			continue
		}
		if rec.Type.IsStderr() {
			if s.writeStderr(rec.Payload) != nil {
				return s.fatalOutput()
			}
			continue
		}
		if rec.Type.IsOutput() {
			s.pending = append(s.pending, rec.Payload...)
			if len(s.pending) >= flushAt {
				if err := s.flush(); err != nil {
					return s.fatalOutput()
				}
			}
			continue
		}
		if err := s.flush(); err != nil {
			return s.fatalOutput()
		}
		if end, done := s.handle(c, rec); done {
			return s.endRead(end)
		}
	}
}

// endRead writes the remaining output before the reader returns.
func (s *stream) endRead(end serveEnd) serveEnd {
	if err := s.flush(); err != nil {
		return s.fatalOutput()
	}
	return end
}

func (s *stream) fatalOutput() serveEnd {
	return serveEnd{fatal: true, err: fmt.Errorf("write the job's output: %w", s.outErr)}
}

// flush writes the queued block payloads and the pending output to
// opts.Output.
func (s *stream) flush() error {
	if s.outErr != nil {
		return s.outErr
	}
	if err := s.flushQueued(); err != nil {
		return err
	}
	if len(s.pending) == 0 {
		return nil
	}
	if err := s.writeOutput(s.pending); err != nil {
		return err
	}
	// Keep the buffer for the next bulk write while the writes are big:
	// a job whose output slows down (or stops) holds no more than
	// keepPending for it once releaseAfter writes in a row were small.
	written := len(s.pending)
	s.pending = s.pending[:0]
	if c := cap(s.pending); c <= keepPending || written >= c/4 {
		s.smallWrites = 0
	} else if s.smallWrites++; s.smallWrites >= releaseAfter {
		s.pending, s.smallWrites = nil, 0
	}
	return nil
}

// writeStderr writes a stderr record's payload to opts.Stderr, after the
// output received before it; without opts.Stderr it joins the output.
func (s *stream) writeStderr(p []byte) error {
	if s.stderr == nil {
		s.pending = append(s.pending, p...)
		if len(s.pending) >= flushAt {
			return s.flush()
		}
		return nil
	}
	if err := s.flush(); err != nil {
		return err
	}
	n, err := s.stderr.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		s.outErr = fmt.Errorf("write the job's stderr: %w", err)
	}
	return s.outErr
}

// writeOutput writes p to opts.Output, remembering the first failure.
func (s *stream) writeOutput(p []byte) error {
	n, err := s.output.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		s.outErr = err
	}
	return err
}

// sync looks for the answer to this connection's resume command; everything
// before it is ignored. It reports ok when the reader must return.
func (s *stream) sync(c *connState, rec protocol.Record) (serveEnd, bool) {
	if rec.Type == protocol.TypeAlive {
		// A ping answer comes after the resume answer, but an unanswered
		// ping must not outlive the connection's sync either way.
		var a protocol.Alive
		if json.Unmarshal(rec.Payload, &a) == nil {
			c.pong(a.Nonce)
		}
	}
	if rec.Type != protocol.TypeResumed {
		return serveEnd{}, false
	}
	var r protocol.Resumed
	if json.Unmarshal(rec.Payload, &r) != nil {
		return serveEnd{}, false
	}
	if s.findEnd && r.Nonce == c.endNonce {
		return s.foundEnd(c, r)
	}
	if r.Nonce != c.nonce {
		return serveEnd{}, false
	}
	if r.Error != "" {
		return serveEnd{fatal: true, err: fmt.Errorf("%w: output lost: the shim retains output only from offset %d, this client needs offset %d: %s",
			ErrNoResult, r.Oldest, s.next, r.Error)}, true
	}
	c.synced.Store(true)
	s.emit(Event{Kind: EventConnected, Attempt: s.attempts})
	s.log.Debug("connected to the shim", "attempt", s.attempts, "from", r.From, "end", r.End)
	return serveEnd{}, false
}

// handle acts on a sequenced JSON record. done means the reader returns
// end.
func (s *stream) handle(c *connState, rec protocol.Record) (end serveEnd, done bool) {
	bad := func(err error) (serveEnd, bool) {
		return serveEnd{fatal: true, err: fmt.Errorf("%s record at offset %d: %w", rec.Type, rec.Seq, err)}, true
	}
	switch rec.Type {
	case protocol.TypeHello:
		var h protocol.Hello
		if err := json.Unmarshal(rec.Payload, &h); err != nil {
			return bad(err)
		}
		if h.Protocol < protocol.MinVersion || h.Protocol > protocol.Version {
			return bad(fmt.Errorf("the shim (version %s) speaks protocol %d, this client protocols %d to %d: use matching tether and tether-shim builds",
				h.Shim, h.Protocol, protocol.MinVersion, protocol.Version))
		}
		s.log.Debug("shim hello", "shim", h.Shim, "pid", h.PID, "shell", h.Shell, "replay", h.Replay)
		if s.job != nil && s.job.Stderr == protocol.StderrSeparate && h.Protocol < stderrVersion {
			s.log.Warn("the shim is older than stderr records: the job's stderr arrives merged into its output (use matching tether and tether-shim builds)",
				"shim", h.Shim, "protocol", h.Protocol)
		}
	case protocol.TypeBegin:
		var b protocol.Begin
		if err := json.Unmarshal(rec.Payload, &b); err != nil {
			return bad(err)
		}
		if !s.ours(b.Job) {
			return
		}
		s.jobSeen = true
		s.emit(Event{Kind: EventScriptBegin, Script: b.Script, Phase: b.Phase})
	case protocol.TypeStatus:
		var st protocol.Status
		if err := json.Unmarshal(rec.Payload, &st); err != nil {
			return bad(err)
		}
		if !s.ours(st.Job) {
			return
		}
		s.jobSeen = true
		s.res.Statuses = append(s.res.Statuses, st)
		s.emit(Event{Kind: EventScriptStatus, Script: st.Script, Phase: st.Phase, Status: st})
	case protocol.TypeJob:
		var j protocol.JobDone
		if err := json.Unmarshal(rec.Payload, &j); err != nil {
			return bad(err)
		}
		if !s.ours(j.Job) {
			return
		}
		s.jobSeen, s.jobDone = true, true
		s.res.ExitCode, s.res.FailedScript, s.res.Cancelled = j.ExitCode, j.FailedScript, j.Cancelled
		if !s.exitShim {
			return serveEnd{}, true
		}
		c.send(protocol.Command{Cmd: protocol.CmdExit})
		close(c.jobDone)
	case protocol.TypeError:
		var e protocol.ErrorRecord
		if err := json.Unmarshal(rec.Payload, &e); err != nil {
			return bad(err)
		}
		msg := e.Error
		if e.Input != "" {
			msg += " (input: " + e.Input + ")"
		}
		s.emit(Event{Kind: EventShimError, Message: msg})
		s.log.Warn("the shim rejected a command", "error", e.Error, "input", e.Input)
		if s.job != nil && !s.jobSeen && strings.Contains(e.Input, `"id":`+quote(s.job.ID)) {
			return serveEnd{fatal: true, err: fmt.Errorf("the shim rejected the job: %s", e.Error)}, true
		}
	case protocol.TypeExit:
		var x protocol.Exit
		if err := json.Unmarshal(rec.Payload, &x); err != nil {
			return bad(err)
		}
		s.exited = true
		s.res.Exit = &x
		s.emit(Event{Kind: EventShimExit, Exit: x, Message: x.Message})
		if !s.jobDone {
			s.res.ExitCode = x.ExitCode
			s.exitErr = fmt.Errorf("%w (reason %s, exit code %d): %s", ErrShimExited, x.Reason, x.ExitCode, x.Message)
		}
		return serveEnd{}, true
	}
	return serveEnd{}, false
}

// ours reports whether a record of job id belongs to this session's job
// (every job does for Attach).
func (s *stream) ours(id string) bool {
	return s.job == nil || id == s.job.ID
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// alive acts on a ping answer: it lets the connection's next ping go, and
// it ends an Attach session that has nothing to follow: the answer says
// the shim is idle, and every record before it (the answer is written in
// stream order) has been read.
func (s *stream) alive(c *connState, rec protocol.Record) (serveEnd, bool) {
	var a protocol.Alive
	if json.Unmarshal(rec.Payload, &a) != nil {
		return serveEnd{}, false
	}
	c.pong(a.Nonce)
	if s.job != nil || a.State != protocol.StateIdle || a.End > s.next {
		return serveEnd{}, false
	}
	return serveEnd{fatal: true, err: fmt.Errorf("%w: %w: the shim is idle and its output ends at offset %d; a job that ran there finished before it (attach from offset 0 to replay the whole stream)",
		ErrNoResult, ErrNoJob, a.End)}, true
}

// foundEnd acts on the answer to the resume that asked for the stream's
// end (Options.FromEnd): it resumes from that end and sends the job, unless
// the session withheld it (cancelled first).
func (s *stream) foundEnd(c *connState, r protocol.Resumed) (serveEnd, bool) {
	if r.Error == "" || r.End < 0 {
		return serveEnd{fatal: true, err: fmt.Errorf("the shim did not say where its record stream ends (resume answer %+v)", r)}, true
	}
	s.findEnd, s.next = false, r.End
	c.send(protocol.Command{Cmd: protocol.CmdResume, From: r.End, Nonce: c.nonce})
	if c.jobGate.CompareAndSwap(jobPending, jobSent) {
		c.sendLines(s.jobLine, protocol.CmdJob)
	}
	return serveEnd{}, false
}
