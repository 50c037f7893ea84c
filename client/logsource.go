package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/tether-ci/tether/protocol"
)

// LogSource is implemented by a Transport that can still read what the
// shim wrote to its stdout after the shim is gone: a Kubernetes
// container's log, say. When Connect reports ErrShimGone before the job's
// result arrived, the session reads the log once, from the record it needs
// next, so records the shim wrote while nobody was attached (up to its
// final record) still count. The transport itself stays a byte pipe; the
// session does all the protocol work.
type LogSource interface {
	// OpenLog returns the shim's stdout as recorded from its start. Lines
	// that are not records (diagnostics written to the same log) are
	// skipped. An error wrapping errors.ErrUnsupported means there is no
	// log to read (the session then reports the Connect error alone).
	OpenLog(ctx context.Context) (io.ReadCloser, error)
}

// LogGapError is the error of a log that lacks records the session needs:
// the container's log was rotated (the kubelet keeps a few files of 10 MiB
// by default, and the pods/log API reads the newest) before they were read,
// either before the first record the log still holds or between two of its
// records. The output is then incomplete, and the session says so instead
// of joining what comes before and after the gap.
type LogGapError struct {
	// After is the stream offset the session needed next: everything
	// before it was read.
	After int64
	// Lost is the count of record-stream bytes missing from the log (the
	// records from After up to the next one the log holds).
	Lost int64
}

func (e *LogGapError) Error() string {
	return fmt.Sprintf("output incomplete: %d bytes of the shim's record stream lost after stream offset %d "+
		"(the container's log, read because the container ended while no connection was attached, was rotated by the kubelet before they were read)",
		e.Lost, e.After)
}

// errBlockInterleaved is returned by the log filter when a block record in
// the log does not end in a newline after its length: a line of another
// stream was logged inside its payload.
var errBlockInterleaved = errors.New("a line of the container's stderr (the shim's diagnostics) was logged inside it; " +
	"this happens where the API server cannot return the log's stdout alone (Kubernetes without the PodLogsQuerySplitStreams feature)")

// readLog follows the job in ls's log after the shim is gone. It returns
// nil when the job's result or the shim's final record was read, else an
// error saying why not.
func (s *session) readLog(ctx context.Context, ls LogSource) error {
	// The job's outcome is in the log even when ctx was cancelled.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ReconnectTimeout)
	defer cancel()
	rc, err := ls.OpenLog(ctx)
	if err != nil {
		return fmt.Errorf("read the shim's log: %w", err)
	}
	defer rc.Close()
	s.emit(Event{Kind: EventLogReplay, Offset: s.st.next})
	s.log.Debug("the shim is gone; reading its output from its log", "from", s.st.next)
	c := &connState{
		conn:       logConn{r: &logRecords{br: bufio.NewReaderSize(rc, 4*protocol.MaxRecord), from: s.st.next}, c: rc},
		sendq:      make(chan outMsg, 32), // commands go nowhere: nobody is left to run them
		stop:       make(chan struct{}),
		writerDone: make(chan struct{}),
		jobDone:    make(chan struct{}),
	}
	c.synced.Store(true)
	end := s.st.read(c)
	switch {
	case s.st.jobDone || s.st.exited:
		return nil
	case end.err != nil:
		return fmt.Errorf("the shim's log: %w", end.err)
	}
	return errors.New("the shim's log ends before the job's result")
}

// logConn reads a log as a connection that accepts and drops commands.
type logConn struct {
	r io.Reader
	c io.Closer
}

func (l logConn) Read(p []byte) (int, error)  { return l.r.Read(p) }
func (l logConn) Write(p []byte) (int, error) { return len(p), nil }
func (l logConn) Close() error                { return l.c.Close() }

// logRecords yields the sequenced records of a log from offset from on,
// whole lines at a time; anything else in the log is skipped. It fails with
// a *LogGapError when the first such record starts after from, or a record
// starts after the end of the one before it.
type logRecords struct {
	br      *bufio.Reader
	from    int64  // the offset needed next
	buf     []byte // parse scratch
	pending []byte // the rest of the current record not yet read
	block   []byte // holds a block record read whole
}

func (l *logRecords) Read(p []byte) (int, error) {
	for len(l.pending) == 0 {
		line, err := l.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			for errors.Is(err, bufio.ErrBufferFull) { // longer than any record: skip the line
				_, err = l.br.ReadSlice('\n')
			}
			continue
		}
		if err != nil {
			return 0, err
		}
		var rec protocol.Record
		rec, l.buf, err = protocol.Parse(line, l.buf)
		if err != nil || !rec.Type.Sequenced() {
			continue
		}
		if rec.Type == protocol.TypeBlock {
			// The payload and final newline follow the header line. A
			// log that mixes stdout and stderr can have a diagnostic line
			// in between, which is not told from the payload: a block
			// whose last byte is not its newline says so (one whose
			// shifted last byte happens to be a newline does not).
			hdr := len(line)
			l.block = append(append(l.block[:0], line...), make([]byte, rec.Size-hdr)...)
			if _, err := io.ReadFull(l.br, l.block[hdr:]); err != nil {
				return 0, err
			}
			line = l.block
		}
		if rec.Seq < l.from {
			continue
		}
		if rec.Seq > l.from {
			return 0, &LogGapError{After: l.from, Lost: rec.Seq - l.from}
		}
		if rec.Type == protocol.TypeBlock && line[len(line)-1] != '\n' {
			return 0, fmt.Errorf("the block record at offset %d does not end where its length says: %w", rec.Seq, errBlockInterleaved)
		}
		l.from = rec.Next()
		l.pending = line
	}
	n := copy(p, l.pending)
	l.pending = l.pending[n:]
	return n, nil
}
