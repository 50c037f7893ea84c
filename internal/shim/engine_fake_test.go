package shim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tether-ci/tether/protocol"
)

// transcript is the ordered account of what an engine under test did:
// the records it wrote and the signals its fake processes received.
type transcript struct {
	mu    sync.Mutex
	lines []string
}

func (tr *transcript) add(format string, args ...any) {
	tr.mu.Lock()
	tr.lines = append(tr.lines, fmt.Sprintf(format, args...))
	tr.mu.Unlock()
}

func (tr *transcript) all() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.lines...)
}

// recordWriter is the emitter's stdout in engine tests: it decodes every
// record written into a transcript line.
type recordWriter struct {
	t  *testing.T
	tr *transcript
}

func (w *recordWriter) Write(b []byte) (int, error) {
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		rec, _, err := protocol.Parse(line, nil)
		if err != nil {
			w.t.Errorf("the engine wrote a malformed record %q: %v", line, err)
			continue
		}
		w.tr.add("%s", describe(w.t, rec))
	}
	return len(b), nil
}

// describe turns a record into a short transcript line.
func describe(t *testing.T, rec protocol.Record) string {
	decode := func(v any) {
		if err := json.Unmarshal(rec.Payload, v); err != nil {
			t.Errorf("record %c payload %q: %v", rec.Type, rec.Payload, err)
		}
	}
	switch rec.Type {
	case protocol.TypeBegin:
		var b protocol.Begin
		decode(&b)
		return fmt.Sprintf("begin %s %s %s", b.Script, b.Phase, b.Job)
	case protocol.TypeStatus:
		var s protocol.Status
		decode(&s)
		return fmt.Sprintf("status %s %s %s %d %q", s.Script, s.Phase, s.Job, s.CommandExitCode, s.Error)
	case protocol.TypeJob:
		var j protocol.JobDone
		decode(&j)
		return fmt.Sprintf("job %s exit=%d failed=%s cancelled=%v", j.Job, j.ExitCode, j.FailedScript, j.Cancelled)
	case protocol.TypeExit:
		var x protocol.Exit
		decode(&x)
		return fmt.Sprintf("exit %s %d %q", x.Reason, x.ExitCode, x.Message)
	case protocol.TypeAlive:
		var a protocol.Alive
		decode(&a)
		return fmt.Sprintf("alive %s %s", a.State, a.Script)
	case protocol.TypeError:
		var e protocol.ErrorRecord
		decode(&e)
		return fmt.Sprintf("error %q", e.Error)
	}
	return fmt.Sprintf("%c %q", rec.Type, rec.Payload)
}

// fakeStarter starts fake processes whose exit the test controls.
type fakeStarter struct {
	tr     *transcript
	refuse map[string]*startError // scripts that cannot start
	mu     sync.Mutex
	procs  map[string]*fakeProc // the latest process of each script
}

func (s *fakeStarter) start(sc scriptStart) (proc, error) {
	if err, ok := s.refuse[sc.path]; ok {
		return nil, err
	}
	p := &fakeProc{script: sc.path, tr: s.tr, exit: make(chan protocol.Status, 1)}
	s.mu.Lock()
	s.procs[sc.path] = p
	s.mu.Unlock()
	return p, nil
}

func (s *fakeStarter) proc(t *testing.T, script string) *fakeProc {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.procs[script]
	if p == nil {
		t.Fatalf("%s was never started", script)
	}
	return p
}

// fakeProc is a script process that exits when the test says so.
type fakeProc struct {
	script string
	tr     *transcript
	exit   chan protocol.Status
	mu     sync.Mutex
	gone   bool
}

func (p *fakeProc) signal(sig syscall.Signal) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone {
		return false
	}
	if sig != syscall.SIGCONT {
		p.tr.add("signal %s %s", strings.TrimPrefix(signalName(sig), "SIG"), p.script)
	}
	return true
}

func (p *fakeProc) wait() protocol.Status { return <-p.exit }

// end makes the process exit with code (128+N names signal N).
func (p *fakeProc) end(t *testing.T, code int) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone {
		t.Fatalf("%s exited twice", p.script)
	}
	p.gone = true
	st := protocol.Status{CommandExitCode: code}
	if code > 128 {
		st.Signal = signalName(syscall.Signal(code - 128))
	}
	p.exit <- st
}

// harness drives an engine step by step on a fake clock.
type harness struct {
	t     *testing.T
	e     *engine
	st    *fakeStarter
	tr    *transcript
	now   time.Time
	ended bool
	code  int
}

// t0 is the fake clock's start.
var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// testConfig is the configuration engine tests start from.
func testConfig() *Config {
	return &Config{Grace: 10 * time.Second, AfterTimeout: 5 * time.Minute, DrainTimeout: 2 * time.Second, ExitOnStdinEOF: true, Start: t0}
}

func newHarness(t *testing.T, cfg *Config, refuse map[string]*startError) *harness {
	tr := &transcript{}
	log := slog.New(slog.DiscardHandler)
	em := newEmitter(&recordWriter{t: t, tr: tr}, newMemoryStore(1<<20), log)
	st := &fakeStarter{tr: tr, refuse: refuse, procs: map[string]*fakeProc{}}
	h := &harness{t: t, st: st, tr: tr, now: t0}
	h.e = newEngine(cfg, log, em, st, fileSink{}, &masks{}, t0)
	h.step()
	return h
}

// step lets the engine act at the harness's time.
func (h *harness) step() {
	h.t.Helper()
	if h.ended {
		h.t.Fatal("the engine is driven after it wrote its final record")
	}
	h.code, h.ended = h.e.step(h.now)
}

// deliver hands the engine the status its running script reported.
func (h *harness) deliver() {
	h.t.Helper()
	select {
	case res := <-h.e.results:
		h.e.onResult(res, h.now)
	case <-time.After(10 * time.Second):
		h.t.Fatal("no script result to deliver")
	}
	h.step()
}

// action is one step of an engine scenario.
type action func(h *harness)

func send(c protocol.Command) action {
	return func(h *harness) {
		h.e.onCommand(commandEvent{cmd: c}, h.now)
		h.step()
	}
}

func jobCmd(id string, scripts, after []string) protocol.Command {
	return protocol.Command{Cmd: protocol.CmdJob, ID: id, Scripts: scripts, After: after}
}

func cancelCmd(id string, graceMS int64) protocol.Command {
	return protocol.Command{Cmd: protocol.CmdCancel, ID: id, GraceMS: graceMS}
}

// exits makes script's process exit with code and delivers its status.
func exits(script string, code int) action {
	return func(h *harness) {
		h.st.proc(h.t, script).end(h.t, code)
		h.deliver()
	}
}

// exitsUnseen makes script's process exit with code; the engine does not
// see its status until deliver.
func exitsUnseen(script string, code int) action {
	return func(h *harness) { h.st.proc(h.t, script).end(h.t, code) }
}

func deliver() action { return func(h *harness) { h.deliver() } }

// wait moves the fake clock on by d and lets the engine act.
func wait(d time.Duration) action {
	return func(h *harness) {
		h.now = h.now.Add(d)
		h.step()
	}
}

func sendSignal(sig syscall.Signal) action {
	return func(h *harness) {
		h.e.onSignal(sig, h.now)
		h.step()
	}
}

func stdinEOF() action {
	return func(h *harness) {
		h.e.onCommand(commandEvent{err: io.EOF}, h.now)
		h.step()
	}
}
