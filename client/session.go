package client

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/tether-ci/tether/internal/random"
	"github.com/tether-ci/tether/protocol"
)

// exitWait bounds how long a session waits for the shim's final record
// after it sent the exit command (Options.ExitShim).
const exitWait = 15 * time.Second

// maxGaps is how many connections in a row may skip records before the
// session gives up instead of resuming again.
const maxGaps = 3

// Run submits job to the shim behind t and follows it to its result.
//
// The job's output goes to opts.Output byte-exact (its stderr to
// opts.Stderr when that is set). Run returns when the
// shim reports the job's result (a nil error, whatever the exit code), when
// the shim exits before it (an error wrapping ErrShimExited), when the shim
// cannot be reached any more (an error wrapping ErrNoResult), or after ctx
// is cancelled: then Run sends the cancel command, waits up to
// opts.CancelTimeout for the result and returns it with Result.Cancelled
// set and an error wrapping context.Cause(ctx).
func Run(ctx context.Context, t Transport, job Job, opts Options) (Result, error) {
	if len(job.Scripts)+len(job.Argv)+len(job.After) == 0 {
		return Result{}, errors.New("client.Run: the job has no scripts")
	}
	if job.ID == "" {
		job.ID = newJobID()
	}
	cmd := protocol.Command{Cmd: protocol.CmdJob, ID: job.ID, Scripts: job.Scripts, Argv: job.Argv, After: job.After, Mask: job.Mask, Shell: job.Shell,
		AfterTimeoutMS: afterTimeoutMS(job.AfterTimeout), TimeoutMS: timeoutMS(job.Timeout),
		EnvFile: job.EnvFile, DeadlineMS: timeoutMS(job.Deadline), TTLMS: timeoutMS(job.TTL)}
	if opts.Stderr != nil {
		cmd.Stderr = protocol.StderrSeparate
	}
	var files []protocol.Command
	for _, f := range job.Files {
		fc, err := fileCommands(f)
		if err != nil {
			return Result{}, fmt.Errorf("client.Run: %w", err)
		}
		files = append(files, fc...)
		cmd.Remove = append(cmd.Remove, f.Path)
	}
	if job.EnvFile != "" && !slices.Contains(cmd.Remove, job.EnvFile) {
		return Result{}, fmt.Errorf("client.Run: Job.EnvFile %s is not the path of one of Job.Files", job.EnvFile)
	}
	if err := cmd.Validate(); err != nil {
		return Result{}, fmt.Errorf("client.Run: %w", err)
	}
	jobLine, err := jobLines(files, cmd)
	if err != nil {
		return Result{}, fmt.Errorf("client.Run: %w", err)
	}
	s, err := newSession(t, opts)
	if err != nil {
		return Result{}, err
	}
	if opts.From < 0 {
		return Result{}, fmt.Errorf("client.Run: Options.From %d is negative", opts.From)
	}
	s.job, s.st.job, s.jobLine = &cmd, &cmd, jobLine
	s.st.next = opts.From
	if opts.FromEnd {
		if opts.From != 0 {
			return Result{}, errors.New("client.Run: Options.From and Options.FromEnd are both set")
		}
		s.st.findEnd, s.st.jobLine = true, jobLine
	}
	return s.run(ctx)
}

// Attach follows a job that was already submitted (by another process),
// replaying its output from offset from (0 for the whole stream; a
// Result.Offset of an earlier session to continue where it stopped). It
// returns at the first job record, or at the shim's final record, with the
// same results and errors as Run; or, when the shim is idle and its stream
// holds nothing past the offset reached, with an error wrapping ErrNoJob
// (there is nothing to follow). Cancelling ctx cancels the job, as with
// Run: the caller following a job owns it.
func Attach(ctx context.Context, t Transport, from int64, opts Options) (Result, error) {
	if from < 0 {
		return Result{}, fmt.Errorf("client.Attach: offset %d is negative", from)
	}
	s, err := newSession(t, opts)
	if err != nil {
		return Result{}, err
	}
	s.st.next = from
	return s.run(ctx)
}

// session follows one job over as many connections as it takes.
//
// Its state has two owners. The stream (what the records received so far
// say, and the output not yet written) belongs to the goroutine reading the
// current connection while one is served, and to run and serve before that
// reader starts and after it returned. Everything else (connection count,
// cancellation) belongs to run and serve alone; the reader never sees it.
type session struct {
	t    Transport
	opts Options
	log  *slog.Logger
	job  *protocol.Command // nil for Attach
	// limit is Options.OutputLimit's budget (nil: none).
	limit *outputBudget
	// jobLine is the job's files and job command, encoded: what every
	// connection sends until the shim saw the job.
	jobLine []byte

	st *stream // see above

	attempts  int  // connections made
	submitted bool // a job command may have reached the shim

	// cancellation
	cancelCause error     // context.Cause(ctx) once ctx is done
	cancelID    string    // the cancel command's ID, resent on every connection
	cancelBy    time.Time // give up waiting for the result then
	cancelTimer *time.Timer
}

// stream is the part of a session the record reader owns while it runs:
// the records' outcome so far and the output not yet written. Its config
// fields are copies that never change.
type stream struct {
	job    *protocol.Command // nil for Attach
	output io.Writer
	// stderr receives the scripts' stderr records (Options.Stderr); nil:
	// they join output.
	stderr io.Writer
	events func(Event)
	log    *slog.Logger
	// exitShim: send the exit command after the job record
	// (Options.ExitShim).
	exitShim bool
	// findEnd: the stream's end is not known yet (Options.FromEnd); the
	// connection asks the shim for it and sends jobLine once it knows.
	findEnd bool
	jobLine []byte

	next     int64 // offset of the next record wanted
	res      Result
	jobSeen  bool  // a b/s/j record of our job arrived
	jobDone  bool  // the job record arrived
	exited   bool  // the final record arrived
	exitErr  error // set with exited when the job had not finished
	gaps     int   // consecutive connections that ended on a gap
	attempts int   // connections made, as of the one being read (for events)

	pending []byte // decoded output not yet written to output
	// queued are block payloads in the decoder's buffer not yet written
	// to output (they go before pending); vec writes them in one call
	// where the output allows it.
	queued      [][]byte
	vec         vectorWriter
	smallWrites int   // writes in a row that used a small part of pending's capacity
	outErr      error // output failed
}

func newSession(t Transport, opts Options) (*session, error) {
	if t == nil {
		return nil, errors.New("client: nil Transport")
	}
	if opts.Output == nil {
		return nil, errors.New("client: Options.Output is required")
	}
	opts = opts.withDefaults()
	if opts.OutputLimit < 0 {
		return nil, fmt.Errorf("client: Options.OutputLimit %d is negative", opts.OutputLimit)
	}
	var limit *outputBudget
	if opts.OutputLimit > 0 {
		limit = &outputBudget{left: opts.OutputLimit}
		opts.Output = &limitWriter{w: opts.Output, b: limit}
		if opts.Stderr != nil {
			opts.Stderr = &limitWriter{w: opts.Stderr, b: limit}
		}
	}
	st := &stream{output: opts.Output, stderr: opts.Stderr, vec: outputVectorWriter(opts.Output), events: opts.Events, log: opts.Logger, exitShim: opts.ExitShim}
	return &session{t: t, opts: opts, log: opts.Logger, st: st, limit: limit}, nil
}

func (s *session) emit(ev Event) { s.st.emit(ev) }

func (st *stream) emit(ev Event) {
	if st.events != nil {
		st.events(ev)
	}
}

// noteCancel records that ctx is done and starts the cancel timeout.
func (s *session) noteCancel(ctx context.Context) {
	if s.cancelCause != nil {
		return
	}
	s.cancelCause = context.Cause(ctx)
	if s.cancelCause == nil {
		s.cancelCause = ctx.Err()
	}
	s.cancelID = "cancel-" + random.Hex(8)
	s.cancelBy = time.Now().Add(s.opts.CancelTimeout)
	s.cancelTimer = time.NewTimer(s.opts.CancelTimeout)
	s.log.Debug("cancelling the job", "cause", s.cancelCause)
}

// cancelExpired returns a channel that fires when the cancel timeout
// passed (nil before a cancel).
func (s *session) cancelExpired() <-chan time.Time {
	if s.cancelTimer == nil {
		return nil
	}
	return s.cancelTimer.C
}

// run is the reconnect loop.
func (s *session) run(ctx context.Context) (Result, error) {
	defer func() {
		if s.cancelTimer != nil {
			s.cancelTimer.Stop()
		}
	}()
	if s.job == nil {
		s.submitted = true // Attach: the job exists already
	}
	backoff := s.opts.ReconnectMin
	unreachableSince := time.Now()
	var lastErr error
	for {
		if ctx.Err() != nil {
			s.noteCancel(ctx)
			if !s.submitted {
				s.st.res.Cancelled = true
				return s.result(), fmt.Errorf("job not submitted: %w", s.cancelCause)
			}
		}
		if s.cancelCause != nil && !time.Now().Before(s.cancelBy) {
			return s.cancelTimeout(lastErr)
		}
		conn, err := s.connect(ctx, unreachableSince)
		if err == nil {
			s.attempts++
			end := s.serve(ctx, conn)
			if s.st.jobDone || s.st.exited || end.fatal {
				return s.finish(end.err)
			}
			lastErr = end.err
			s.emit(Event{Kind: EventDisconnected, Attempt: s.attempts, Err: end.err})
			s.log.Debug("connection to the shim lost", "attempt", s.attempts, "offset", s.st.next, "err", end.err)
			if end.synced {
				unreachableSince = time.Now()
				backoff = s.opts.ReconnectMin
				continue // reconnect at once after a working connection
			}
		} else {
			if errors.Is(err, ErrShimGone) {
				return s.shimGone(ctx, err)
			}
			lastErr = err
			s.log.Debug("connecting to the shim failed", "err", err)
		}
		if s.cancelCause != nil && !time.Now().Before(s.cancelBy) {
			return s.cancelTimeout(lastErr)
		}
		if since := time.Since(unreachableSince); since >= s.opts.ReconnectTimeout {
			return s.finish(fmt.Errorf("%w: the shim was unreachable for %s (give it longer with Options.ReconnectTimeout): %w",
				ErrNoResult, since.Round(time.Second), lastErr))
		}
		if !s.sleep(ctx, jitter(backoff)) {
			continue // ctx done: handled at the top of the loop
		}
		backoff = min(backoff*2, s.opts.ReconnectMax)
	}
}

// shimGone ends the session once the shim cannot be reached any more: from
// the shim's log when the transport has one, else with err.
func (s *session) shimGone(ctx context.Context, err error) (Result, error) {
	ls, ok := s.t.(LogSource)
	// Options.FromEnd and the stream's end never learned: the job was
	// never sent, so the log holds none of it (only earlier jobs').
	if !ok || s.st.findEnd {
		return s.finish(fmt.Errorf("%w: %w", ErrNoResult, err))
	}
	lerr := s.readLog(ctx, ls)
	switch {
	case lerr == nil:
		return s.finish(nil)
	case errors.Is(lerr, errors.ErrUnsupported):
		return s.finish(fmt.Errorf("%w: %w", ErrNoResult, err))
	}
	return s.finish(fmt.Errorf("%w: %w; %w", ErrNoResult, err, lerr))
}

// connect calls the transport with a context bounded by the reconnect and
// cancel timeouts; it follows ctx only while the job cannot have been
// submitted yet (after that the session must stay to cancel it).
func (s *session) connect(ctx context.Context, unreachableSince time.Time) (Conn, error) {
	deadline := unreachableSince.Add(s.opts.ReconnectTimeout)
	if s.cancelCause != nil && s.cancelBy.Before(deadline) {
		deadline = s.cancelBy
	}
	cctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	if !s.submitted {
		stop := context.AfterFunc(ctx, cancel)
		defer stop()
	}
	return s.t.Connect(cctx)
}

// sleep waits d; it returns false early when ctx is done and that was not
// known yet, or when the cancel timeout fires.
func (s *session) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	done := ctx.Done()
	if s.cancelCause != nil {
		done = nil
	}
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	case <-s.cancelExpired():
		return false
	}
}

// jitter spreads d by ±20%.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	var b [1]byte
	_, _ = rand.Read(b[:])
	return d*8/10 + d*4/10*time.Duration(b[0])/255
}

// cancelTimeout is the outcome when the cancelled job's result never came.
func (s *session) cancelTimeout(lastErr error) (Result, error) {
	s.st.res.Cancelled = true
	err := fmt.Errorf("%w: no job result within %s of the cancel (last error: %v): %w",
		ErrNoResult, s.opts.CancelTimeout, lastErr, s.cancelCause)
	return s.result(), err
}

// finish builds the final result. err is a fatal error, or nil when the job
// record or the final record arrived.
func (s *session) finish(err error) (Result, error) {
	res := s.result()
	switch {
	case s.st.jobDone:
		if res.Cancelled && s.cancelCause != nil {
			return res, fmt.Errorf("job cancelled: %w", s.cancelCause)
		}
		return res, nil
	case s.st.exited && err == nil:
		err = s.st.exitErr
	}
	if err == nil {
		err = ErrNoResult
	}
	if s.cancelCause != nil {
		res.Cancelled = true
		err = fmt.Errorf("%w (cancelled: %w)", err, s.cancelCause)
	}
	return res, err
}

func (s *session) result() Result {
	r := s.st.res
	r.Offset = s.st.next
	r.Reconnects = max(s.attempts-1, 0)
	if s.limit != nil {
		r.OutputDropped = s.limit.dropped.Load()
	}
	return r
}
