package shim

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/tether-ci/tether/protocol"
)

// Resume commands do not wait behind replays. A client whose connections
// break sends a resume on each new one; every resume the shim reads while
// it still replays the stream for an earlier one (whose connection may be
// gone already) is answered between two records of that replay, which then
// goes on from the smaller of its position and the new resume's offset.
// Replaying one connection's stream to the end before reading the next
// resume would put the whole replay (megabytes, when the client is far
// behind) ahead of every later connection's answer: connections that break
// faster than that would never get theirs, each adding one more replay to
// wait for.

// maxPendingResumes bounds the resume commands read and not yet answered
// (they pile up while the serve loop waits for a write to stdout that
// nobody reads). A resume beyond it collapses the box to two: the newest
// and the one asking for the earliest offset. Only a client's newest
// connection can be alive, and its resume is the newest of that client;
// the others' connections were replaced, and their answers would go
// nowhere. The earliest offset is kept (and answered) so that the replay
// still covers every offset any resume asked for: a client drops the
// records it has, and no reader that asked for earlier records (another
// client attached to the same shim, say) is given a stream that starts
// after them.
const maxPendingResumes = 256

// resumeBox holds the resume commands read from stdin and not answered
// yet. The command reader puts them in without waiting for the serve loop,
// which takes them at its next turn or, while it replays, between two
// records of the replay.
type resumeBox struct {
	log     *slog.Logger
	mu      sync.Mutex
	pending []protocol.Command
	ready   chan struct{} // holds a token once a resume was put in
	// unread reports the bytes waiting unread on stdin, or is nil when
	// that cannot be asked (see takeSettled).
	unread func() int
	// stuckAt is the unread count at which takeSettled last stopped
	// waiting for a reader that made no progress (0: none). Only the
	// serve loop, which replays, touches it.
	stuckAt int
}

// newResumeBox returns an empty box that reports a collapse (see
// maxPendingResumes) to log.
func newResumeBox(log *slog.Logger) *resumeBox {
	return &resumeBox{log: log, ready: make(chan struct{}, 1)}
}

// put adds a resume command; a full box collapses to the one asking for
// the earliest offset and c (see maxPendingResumes).
func (b *resumeBox) put(c protocol.Command) {
	b.mu.Lock()
	var dropped int
	var earliest protocol.Command
	if len(b.pending) == maxPendingResumes {
		earliest = slices.MinFunc(b.pending, func(x, y protocol.Command) int { return cmp.Compare(x.From, y.From) })
		dropped = len(b.pending)
		b.pending = b.pending[:0]
		if earliest.From < c.From {
			b.pending = append(b.pending, earliest)
			dropped--
		}
	}
	b.pending = append(b.pending, c)
	b.mu.Unlock()
	if dropped > 0 {
		b.log.Warn("resume commands piled up unanswered (stdout blocked): answering the newest and the earliest offset asked, "+
			"dropping the others, whose connections were replaced",
			"dropped", dropped, "newest_from", c.From, "earliest_from", min(earliest.From, c.From))
	}
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

// take removes and returns the pending resume commands, oldest first.
func (b *resumeBox) take() []protocol.Command {
	b.mu.Lock()
	defer b.mu.Unlock()
	rs := b.pending
	b.pending = nil
	return rs
}

// settleWait and settleTries bound how long takeSettled lets the command
// reader catch up: a few milliseconds at a mark, and only while it makes
// progress.
const (
	settleWait  = 200 * time.Microsecond
	settleTries = 25
)

// takeSettled is take for a replay's marks: it first lets the command
// reader run. A replay keeps the shim's only P busy; the reader, back from
// a read of stdin, waits for the P in the run queue, and would wait until
// the replay ends: a resume sent during a replay that flows freely would
// be answered only after all of it. Yielding lets it run; and while bytes
// still wait unread on stdin (a reader that waits in the network poller
// runs only once this goroutine parks), this goroutine sleeps a little.
func (b *resumeBox) takeSettled() []protocol.Command {
	runtime.Gosched()
	if b.unread == nil {
		return b.take()
	}
	last := b.unread()
	if last == b.stuckAt {
		return b.take() // nothing new since the reader last stopped reading
	}
	b.stuckAt = 0
	for i, stuck := 0, 0; last > 0 && i < settleTries; i++ {
		time.Sleep(settleWait) // parks this goroutine: the reader gets the P
		n := b.unread()
		if n == 0 {
			time.Sleep(settleWait) // and finishes the command it read
			break
		}
		if n >= last {
			if stuck++; stuck == 3 {
				b.stuckAt = n // the reader waits for the serve loop (its queue is full)
				break
			}
		}
		last = n
	}
	return b.take()
}

// Replay marks are stream offsets where a record starts, at least
// markGap apart: a replay is written in pieces between them, and a resume
// can only be answered at a record's start.
const (
	firstMarkGap = 64 << 10
	maxMarks     = 4096
)

// mark notes that a record starts at stream offset off (offsets only
// grow). Called with mu held.
func (e *emitter) mark(off int64) {
	if e.markGap == 0 {
		e.markGap = firstMarkGap
	}
	if n := len(e.marks); n > 0 && off-e.marks[n-1] < e.markGap {
		return
	}
	if len(e.marks) == maxMarks {
		// Forget the marks the store no longer retains, then, if that is
		// not enough, every other one: a long stream gets coarser pieces,
		// not more memory.
		i, _ := slices.BinarySearch(e.marks, e.store.Oldest())
		e.marks = slices.Delete(e.marks, 0, i)
		if len(e.marks) > maxMarks/2 {
			k := 0
			for j := 1; j < len(e.marks); j += 2 {
				e.marks[k] = e.marks[j]
				k++
			}
			e.marks = e.marks[:k]
			e.markGap *= 2
		}
	}
	e.marks = append(e.marks, off)
}

// nextMark returns the first mark after pos, or end if none comes before
// it. Called with mu held.
func (e *emitter) nextMark(pos, end int64) int64 {
	i, found := slices.BinarySearch(e.marks, pos)
	if found {
		i++
	}
	if i < len(e.marks) && e.marks[i] < end {
		return e.marks[i]
	}
	return end
}

// ResumeAll answers the resume commands rs: a resumed record for each,
// then the stored records from the smallest offset asked for to the
// current end, all while holding the lock so no live record can slip in.
// At every mark the replay passes it answers the resumes more returns
// (more may be nil) and goes on from the smaller of its position and
// theirs, so every resume is followed by the records from its offset (or
// earlier: the client drops what it has) to the end.
func (e *emitter) ResumeAll(rs []protocol.Command, more func() []protocol.Command) {
	e.gate.Lock()
	defer e.gate.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.writeHeld() // the replay comes from the store
	end := e.enc.Offset()
	pos, ok := e.answerResumes(rs, end)
	w := &replayWriter{e: e, end: end, more: more}
	for ok && pos < end && e.err == nil {
		w.pos = pos
		err := e.store.CopyRange(w, pos, end)
		if errors.Is(err, errRestart) {
			pos = w.restart
			continue
		}
		if err != nil && e.err == nil {
			e.fail(fmt.Errorf("replay records: %w", err))
		}
		return
	}
}

// errRestart stops a replay that must go on from an earlier offset.
var errRestart = errors.New("the replay restarts from an earlier offset")

// replayWriter writes a replay to stdout and, at every mark it passes,
// answers the resumes that arrived meanwhile; when one of them asks for
// earlier records it stops the replay with errRestart (restart says from
// where). The store is read in one piece otherwise: a replay costs what
// it did before it could be interrupted.
type replayWriter struct {
	e       *emitter
	pos     int64 // stream offset of the next byte written
	end     int64
	more    func() []protocol.Command
	restart int64
}

func (w *replayWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		next := w.e.nextMark(w.pos, w.end)
		k := int(min(int64(len(p)), next-w.pos))
		if _, err := w.e.out.Write(p[:k]); err != nil {
			return n, fmt.Errorf("write records to stdout: %w", err)
		}
		n, p, w.pos = n+k, p[k:], w.pos+int64(k)
		if w.pos != next || next >= w.end || w.more == nil {
			continue
		}
		from, ok := w.e.answerResumes(w.more(), w.end)
		if w.e.err != nil {
			return n, w.e.err
		}
		if ok && from < w.pos {
			w.restart = from
			return n, errRestart
		}
	}
	return n, nil
}

// answerResumes writes the resumed records answering rs and returns the
// smallest offset to replay from, ok false when there is nothing to
// replay for them. Called with mu held.
func (e *emitter) answerResumes(rs []protocol.Command, end int64) (from int64, ok bool) {
	for _, c := range rs {
		if f, replay := e.answerResume(c, end); replay && (!ok || f < from) {
			from, ok = f, true
		}
	}
	return from, ok
}

// answerResume writes the resumed record answering c and reports the
// offset to replay from, ok false when there is nothing to replay for it
// (an error answer, or a failed stream). Called with mu held.
func (e *emitter) answerResume(c protocol.Command, end int64) (int64, bool) {
	ans := protocol.Resumed{Nonce: c.Nonce, From: c.From, End: end, Oldest: e.store.Oldest()}
	switch {
	case c.From > end:
		ans.Error = fmt.Sprintf("offset %d is past the end of the stream (%d)", c.From, end)
	case c.From < ans.Oldest:
		ans.Error = fmt.Sprintf("output before offset %d is no longer retained (replay window exceeded; run the shim with --spool-dir to keep everything)", ans.Oldest)
	}
	e.unsequenced(protocol.TypeResumed, ans)
	return c.From, ans.Error == "" && e.err == nil
}
