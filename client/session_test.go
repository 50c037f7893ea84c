package client_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/tether-ci/tether/internal/testing/syncbuf"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/protocol"
)

// testOpts are session options for tests: frequent pings and quick
// reconnects, and stall, reconnect and cancel timeouts so long that a
// loaded machine never breaks a connection or ends a session the test did
// not break or end itself (tests count reconnects and commands). A test
// whose subject is one of these timeouts sets it short itself.
func testOpts(out *syncbuf.Buffer) client.Options {
	return client.Options{
		Output:           out,
		PingInterval:     20 * time.Millisecond,
		StallTimeout:     30 * time.Second,
		ReconnectMin:     time.Millisecond,
		ReconnectMax:     10 * time.Millisecond,
		ReconnectTimeout: 60 * time.Second,
		CancelTimeout:    30 * time.Second,
	}
}

var testJob = client.Job{ID: "j1", Scripts: []string{"/s.sh"}}

func TestGarbageBeforeTheResumeAnswerIsIgnored(t *testing.T) {
	f := newFakeShim(t)
	// What a reconnect may deliver first: the tail of a record, records
	// that look real (a job result, a final record, another client's
	// resume answer), a line longer than any record, a torn line.
	f.prefix = func(int) []byte {
		return []byte("ail of a line\n" +
			"j 0 {\"exit_code\":0,\"job\":\"j1\"}\n" +
			"x 0 {\"reason\":\"fatal\",\"exit_code\":70}\n" +
			"r - {\"nonce\":\"someone-else\",\"from\":0,\"end\":0}\n" +
			"o 0 fake output\n" +
			strings.Repeat("z", 3*protocol.MaxRecord) + "\n" +
			// A line of a block's raw payload that looks like a block
			// header: taken on trust, it would swallow the resume answer.
			"d 0 16000\n")
	}
	f.onJob = func(f *fakeShim, c protocol.Command) { finishJob(f, c, "real output\n", 0) }
	f.start()
	var out syncbuf.Buffer
	res, err := client.Run(context.Background(), f, testJob, testOpts(&out))
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != "real output\n" || res.ExitCode != 0 || len(res.Statuses) != 1 {
		t.Fatalf("output %q result %+v", out.String(), res)
	}
}

func TestDuplicateRecordsInAReplayAreDropped(t *testing.T) {
	f := newFakeShim(t)
	// A replay that starts two records earlier than asked.
	f.replayStart = func(from, end int64, offsets []int64) (int64, string) {
		for i, off := range offsets {
			if off >= from {
				return offsets[max(i-2, 0)], ""
			}
		}
		return offsets[max(len(offsets)-2, 0)], ""
	}
	release := make(chan struct{})
	f.onJob = func(f *fakeShim, c protocol.Command) {
		go func() {
			f.record(protocol.TypeBegin, protocol.Begin{Script: "/s.sh", Phase: "script", Job: "j1"})
			f.output("one\ntwo\n")
			f.blocks("thr")
			f.output("ee")
			<-release
			f.output(" four\n")
			f.record(protocol.TypeStatus, protocol.Status{Script: "/s.sh", Phase: "script", Job: "j1"})
			f.record(protocol.TypeJob, protocol.JobDone{Job: "j1"})
		}()
	}
	f.start()
	var out syncbuf.Buffer
	done := make(chan struct{})
	var res client.Result
	var err error
	go func() {
		res, err = client.Run(context.Background(), f, testJob, testOpts(&out))
		close(done)
	}()
	waitUntil(t, func() bool { return out.String() == "one\ntwo\nthree" })
	f.cut()
	waitUntil(t, func() bool { return len(f.commands(protocol.CmdResume)) == 2 })
	close(release)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != "one\ntwo\nthree four\n" || res.Reconnects != 1 || len(res.Statuses) != 1 {
		t.Fatalf("output %q, result %+v", out.String(), res)
	}
}

func TestReplayErrorIsAHardFailure(t *testing.T) {
	f := newFakeShim(t)
	f.replayStart = func(from, end int64, offsets []int64) (int64, string) {
		if from > 0 {
			return from, "output before offset 5000 is no longer retained"
		}
		return from, ""
	}
	var out syncbuf.Buffer
	f.onJob = func(f *fakeShim, c protocol.Command) {
		f.output("first\n")
		go func() {
			eventually(t, func() bool { return out.String() == "first\n" }) // resume from past it
			f.cut()
		}()
	}
	f.start()
	_, err := client.Run(context.Background(), f, testJob, testOpts(&out))
	if !errors.Is(err, client.ErrNoResult) || !strings.Contains(err.Error(), "output lost") {
		t.Fatalf("error %v, want output lost", err)
	}
	if n := len(f.commands(protocol.CmdResume)); n != 2 {
		t.Fatalf("%d resume commands, want 2 (no retry after a lost replay)", n)
	}
}

func TestRecordsSkippedRepeatedlyEndTheSession(t *testing.T) {
	f := newFakeShim(t)
	// Replays skip the first record wanted.
	f.replayStart = func(from, end int64, offsets []int64) (int64, string) {
		for _, off := range offsets {
			if off > from {
				return off, ""
			}
		}
		return from, ""
	}
	var out syncbuf.Buffer
	f.onJob = func(f *fakeShim, c protocol.Command) {
		f.output("first\n")
		go func() {
			eventually(t, func() bool { return out.String() == "first\n" })
			f.cutAway(func() {
				f.output("second\n") // written while disconnected
				f.output("third\n")
			})
		}()
	}
	f.start()
	_, err := client.Run(context.Background(), f, testJob, testOpts(&out))
	if !errors.Is(err, client.ErrNoResult) || !strings.Contains(err.Error(), "skipped") {
		t.Fatalf("error %v, want records skipped", err)
	}
	if out.String() != "first\n" {
		t.Fatalf("output %q: nothing after the gap may be written", out.String())
	}
}

func TestFinalRecordBeforeTheJobRecordIsErrShimExited(t *testing.T) {
	f := newFakeShim(t)
	f.onJob = func(f *fakeShim, c protocol.Command) {
		f.record(protocol.TypeBegin, protocol.Begin{Script: "/s.sh", Phase: "script", Job: "j1"})
		f.output("working")
		f.record(protocol.TypeExit, protocol.Exit{Reason: protocol.ReasonTTL, ExitCode: 124, Message: "ttl expired"})
	}
	f.start()
	var out syncbuf.Buffer
	res, err := client.Run(context.Background(), f, testJob, testOpts(&out))
	if !errors.Is(err, client.ErrShimExited) || !strings.Contains(err.Error(), "ttl expired") {
		t.Fatalf("error %v", err)
	}
	if res.ExitCode != 124 || res.Exit == nil || res.Exit.Reason != protocol.ReasonTTL || out.String() != "working" {
		t.Fatalf("result %+v output %q", res, out.String())
	}
}

func TestStreamEndWithoutResultAndShimGoneIsAnError(t *testing.T) {
	f := newFakeShim(t)
	f.connectErr = func(n int) error {
		if n > 1 {
			return fmt.Errorf("pod deleted: %w", client.ErrShimGone)
		}
		return nil
	}
	f.onJob = func(f *fakeShim, c protocol.Command) {
		f.record(protocol.TypeBegin, protocol.Begin{Script: "/s.sh", Phase: "script", Job: "j1"})
		f.output("partial")
		go f.cut()
	}
	f.start()
	var out syncbuf.Buffer
	res, err := client.Run(context.Background(), f, testJob, testOpts(&out))
	if !errors.Is(err, client.ErrNoResult) || !errors.Is(err, client.ErrShimGone) {
		t.Fatalf("error %v", err)
	}
	if res.ExitCode != 0 || res.Exit != nil {
		t.Fatalf("result %+v has an outcome", res)
	}
}

func TestUnreachableShimGivesUpAfterReconnectTimeout(t *testing.T) {
	f := newFakeShim(t)
	f.connectErr = func(n int) error { return errors.New("connection refused") }
	f.start()
	var out syncbuf.Buffer
	opts := testOpts(&out)
	opts.ReconnectTimeout = 300 * time.Millisecond
	start := time.Now()
	_, err := client.Run(context.Background(), f, testJob, opts)
	if !errors.Is(err, client.ErrNoResult) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("error %v", err)
	}
	if d := time.Since(start); d < opts.ReconnectTimeout {
		t.Fatalf("gave up after %s, before the reconnect timeout %s", d, opts.ReconnectTimeout)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.connects < 2 {
		t.Fatalf("%d connect attempts: want it to try again", f.connects)
	}
}

func TestUnknownRecordTypeIsAClearError(t *testing.T) {
	f := newFakeShim(t)
	f.onJob = func(f *fakeShim, c protocol.Command) {
		f.output("before\n")
		f.raw(fmt.Sprintf("q %d {}\n", f.enc.Offset()))
	}
	f.start()
	var out syncbuf.Buffer
	_, err := client.Run(context.Background(), f, testJob, testOpts(&out))
	if !errors.Is(err, protocol.ErrUnknownType) || errors.Is(err, client.ErrShimExited) {
		t.Fatalf("error %v, want ErrUnknownType", err)
	}
	if out.String() != "before\n" {
		t.Fatalf("output %q", out.String())
	}
}

func TestProtocolVersionMismatchIsAClearError(t *testing.T) {
	f := newFakeShim(t)
	f.hello = &protocol.Hello{Protocol: protocol.Version + 1, Shim: "future"}
	f.onJob = func(f *fakeShim, c protocol.Command) { finishJob(f, c, "x\n", 0) }
	f.start()
	var out syncbuf.Buffer
	_, err := client.Run(context.Background(), f, testJob, testOpts(&out))
	if err == nil || !strings.Contains(err.Error(), "protocol") {
		t.Fatalf("error %v, want a protocol mismatch", err)
	}
}

func TestJobIsResentUntilTheShimAcknowledgesIt(t *testing.T) {
	f := newFakeShim(t)
	swallowed := 0
	f.onCommand = func(f *fakeShim, c protocol.Command) bool {
		if c.Cmd == protocol.CmdJob && swallowed < 2 {
			swallowed++
			go f.cut() // lost with the connection
			return true
		}
		return false
	}
	f.onJob = func(f *fakeShim, c protocol.Command) { finishJob(f, c, "ran\n", 0) }
	f.start()
	var out syncbuf.Buffer
	res, err := client.Run(context.Background(), f, client.Job{Scripts: []string{"/s.sh"}}, testOpts(&out))
	if err != nil {
		t.Fatal(err)
	}
	jobs := f.commands(protocol.CmdJob)
	if len(jobs) != 3 || jobs[0].ID == "" || jobs[0].ID != jobs[2].ID {
		t.Fatalf("job commands %+v, want the same random ID three times", jobs)
	}
	if out.String() != "ran\n" || res.Reconnects != 2 {
		t.Fatalf("output %q result %+v", out.String(), res)
	}
}

func TestJobIsNotResentOnceSeen(t *testing.T) {
	f := newFakeShim(t)
	var out syncbuf.Buffer
	opts, begun := withBeginSignal(testOpts(&out))
	f.onJob = func(f *fakeShim, c protocol.Command) {
		go func() {
			f.record(protocol.TypeBegin, protocol.Begin{Script: "/s.sh", Phase: "script", Job: "j1"})
			<-begun // the client saw the job begin
			f.cutAway(func() { finishJob(f, c, "", 0) })
		}()
	}
	f.start()
	if _, err := client.Run(context.Background(), f, testJob, opts); err != nil {
		t.Fatal(err)
	}
	if n := len(f.commands(protocol.CmdJob)); n != 1 {
		t.Fatalf("%d job commands after the job's begin record was seen", n)
	}
}

func TestRejectedJobIsAnError(t *testing.T) {
	f := newFakeShim(t)
	f.onCommand = func(f *fakeShim, c protocol.Command) bool {
		if c.Cmd == protocol.CmdJob {
			go f.record(protocol.TypeError, protocol.ErrorRecord{Error: "job refused", Input: `{"cmd":"job","id":"j1","scripts":["/s.sh"]}`})
			return true
		}
		return false
	}
	f.start()
	var out syncbuf.Buffer
	_, err := client.Run(context.Background(), f, testJob, testOpts(&out))
	if err == nil || !strings.Contains(err.Error(), "job refused") {
		t.Fatalf("error %v", err)
	}
}

func TestSilentConnectionIsDeclaredStalled(t *testing.T) {
	f := newFakeShim(t)
	f.connectErr = func(n int) error {
		f.mu.Lock()
		f.silent = n == 1 // the first connection never delivers a byte
		f.mu.Unlock()
		return nil
	}
	f.onJob = func(f *fakeShim, c protocol.Command) { finishJob(f, c, "ok\n", 0) }
	f.start()
	var out syncbuf.Buffer
	var evs []client.Event
	opts := testOpts(&out)
	opts.StallTimeout = 200 * time.Millisecond
	opts.Events = func(ev client.Event) { evs = append(evs, ev) }
	res, err := client.Run(context.Background(), f, testJob, opts)
	if err != nil {
		t.Fatal(err)
	}
	// The silent connection ends first; a loaded machine may stall a
	// later one too (the stall timeout is short: it is the subject).
	if res.Reconnects < 1 || len(evs) == 0 || evs[0].Kind != client.EventDisconnected || out.String() != "ok\n" {
		t.Fatalf("result %+v events %+v output %q", res, evs, out.String())
	}
	if !strings.Contains(evs[0].Err.Error(), "within") && !strings.Contains(evs[0].Err.Error(), "stalled") {
		t.Fatalf("disconnect reason %v", evs[0].Err)
	}
}

func TestCancelBeforeSubmissionReturnsAtOnce(t *testing.T) {
	f := newFakeShim(t)
	block := make(chan struct{})
	defer close(block)
	f.start()
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("runner shutting down")
	tr := transportFunc(func(ctx context.Context) (client.Conn, error) {
		cancel(cause) // while the first connection is being made
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-block:
			return nil, errors.New("unblocked")
		}
	})
	var out syncbuf.Buffer
	// The transport would block until the test ends: Run must return on
	// the cancel alone.
	res, err := runWithin(t, func() (client.Result, error) { return client.Run(ctx, tr, testJob, testOpts(&out)) })
	if !errors.Is(err, cause) || !res.Cancelled {
		t.Fatalf("Run: %+v %v", res, err)
	}
}

func TestCancelWithoutAnswerTimesOut(t *testing.T) {
	f := newFakeShim(t)
	ctx, cancel := context.WithCancel(context.Background())
	f.onJob = func(f *fakeShim, c protocol.Command) {
		f.record(protocol.TypeBegin, protocol.Begin{Script: "/s.sh", Phase: "script", Job: "j1"})
		cancel() // the job was submitted; the fake never answers the cancel
	}
	f.start()
	var out syncbuf.Buffer
	opts := testOpts(&out)
	opts.CancelTimeout = 300 * time.Millisecond
	opts.CancelGrace = 1500 * time.Millisecond
	res, err := runWithin(t, func() (client.Result, error) { return client.Run(ctx, f, testJob, opts) })
	if !errors.Is(err, context.Canceled) || !errors.Is(err, client.ErrNoResult) || !res.Cancelled {
		t.Fatalf("Run: %+v %v", res, err)
	}
	cancels := f.commands(protocol.CmdCancel)
	if len(cancels) != 1 || cancels[0].GraceMS != 1500 {
		t.Fatalf("cancel commands %+v", cancels)
	}
}

func TestOutputWriteErrorEndsTheSession(t *testing.T) {
	f := newFakeShim(t)
	f.onJob = func(f *fakeShim, c protocol.Command) { finishJob(f, c, "data\n", 0) }
	f.start()
	opts := testOpts(nil)
	opts.Output = failWriter{}
	_, err := client.Run(context.Background(), f, testJob, opts)
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("error %v", err)
	}
}

func TestOptionsAreChecked(t *testing.T) {
	f := newFakeShim(t).start()
	if _, err := client.Run(context.Background(), f, testJob, client.Options{}); err == nil {
		t.Fatal("Run without Output succeeded")
	}
	var out syncbuf.Buffer
	if _, err := client.Run(context.Background(), f, client.Job{}, testOpts(&out)); err == nil {
		t.Fatal("Run of an empty job succeeded")
	}
	if _, err := client.Run(context.Background(), nil, testJob, testOpts(&out)); err == nil {
		t.Fatal("Run without a transport succeeded")
	}
	if _, err := client.Attach(context.Background(), f, -1, testOpts(&out)); err == nil {
		t.Fatal("Attach from a negative offset succeeded")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

type transportFunc func(ctx context.Context) (client.Conn, error)

func (f transportFunc) Connect(ctx context.Context) (client.Conn, error) { return f(ctx) }

// condWait bounds how long a test waits for something that takes
// milliseconds unless it never happens: generous, for a loaded machine.
const condWait = 30 * time.Second

// waitUntil polls cond until it holds; the test fails if it does not
// within condWait.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	if !eventually(t, cond) {
		t.Fatal("condition not reached")
	}
}

// eventually polls cond for up to condWait and reports whether it held;
// it marks the test failed (without stopping it: it may run in another
// goroutine) when it did not.
func eventually(t *testing.T, cond func() bool) bool {
	deadline := time.Now().Add(condWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Error("condition not reached")
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

// runWithin runs a session and fails the test if it has not returned
// within condWait (it would hang: whatever should have ended it did not).
func runWithin(t *testing.T, run func() (client.Result, error)) (client.Result, error) {
	t.Helper()
	type result struct {
		res client.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := run()
		done <- result{res, err}
	}()
	select {
	case r := <-done:
		return r.res, r.err
	case <-time.After(condWait):
		t.Fatalf("the session did not return within %s", condWait)
		return client.Result{}, nil
	}
}

// withBeginSignal returns opts whose Events hook closes the channel
// returned once the client saw a script begin.
func withBeginSignal(opts client.Options) (client.Options, <-chan struct{}) {
	begun := make(chan struct{})
	var once sync.Once
	opts.Events = func(ev client.Event) {
		if ev.Kind == client.EventScriptBegin {
			once.Do(func() { close(begun) })
		}
	}
	return opts, begun
}

func TestDisconnectEventSaysWhy(t *testing.T) {
	f := newFakeShim(t)
	var out syncbuf.Buffer
	opts, begun := withBeginSignal(testOpts(&out))
	f.onJob = func(f *fakeShim, c protocol.Command) {
		go func() {
			f.record(protocol.TypeBegin, protocol.Begin{Script: "/s.sh", Phase: "script", Job: "j1"})
			<-begun
			f.cutAway(func() { finishJob(f, c, "", 0) })
		}()
	}
	f.start()
	var reasons []string
	signal := opts.Events
	opts.Events = func(ev client.Event) {
		signal(ev)
		if ev.Kind == client.EventDisconnected {
			reasons = append(reasons, ev.Err.Error())
		}
	}
	if _, err := client.Run(context.Background(), f, testJob, opts); err != nil {
		t.Fatal(err)
	}
	if len(reasons) != 1 || !strings.Contains(reasons[0], "fake connection closed") {
		t.Fatalf("disconnect reasons %q, want the transport's error", reasons)
	}
}
