package client_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/protocol"
)

// lockedBuffer is one screen (or CI log) that the job's output and the
// notices both reach.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A session's output through a LineGate, with notices written from the
// Events callback (as tether run logs a reconnect): the connection breaks
// twice inside a line and once after one; each notice lands after a
// newline of the job's output or after the job, never inside a line, and
// the job's bytes arrive unchanged.
func TestLineGateKeepsReconnectNoticesOutOfLines(t *testing.T) {
	var screen lockedBuffer
	gate := client.NewLineGate(&screen)
	notices := gate.Notices(&screen)
	var jobBytes lockedBuffer
	out := teeOutput{gate: gate, copy: &jobBytes}
	f := newFakeShim(t)
	step := make(chan struct{})
	f.onJob = func(f *fakeShim, c protocol.Command) {
		go func() {
			f.record(protocol.TypeBegin, protocol.Begin{Script: "/s.sh", Phase: "script", Job: c.ID})
			for _, part := range []string{"1.", "2.", "3.\n4."} {
				f.output(part)
				<-step
			}
			f.output("5.")
			f.record(protocol.TypeStatus, protocol.Status{Script: "/s.sh", Phase: "script", Job: c.ID})
			f.record(protocol.TypeJob, protocol.JobDone{Job: c.ID})
		}()
	}
	f.start()
	done := make(chan struct{})
	var res client.Result
	var err error
	opts := client.Options{
		Output:       out,
		ReconnectMin: 1,
		ReconnectMax: 1,
		Events: func(ev client.Event) {
			if ev.Kind == client.EventDisconnected {
				notices.Write([]byte("NOTICE: connection lost\n"))
			}
		},
	}
	go func() {
		res, err = client.Run(context.Background(), f, testJob, opts)
		close(done)
	}()
	for _, want := range []string{"1.", "1.2.", "1.2.3.\n4."} {
		waitUntil(t, func() bool { return jobBytes.String() == want })
		n := len(f.commands(protocol.CmdResume))
		f.cut()
		waitUntil(t, func() bool { return len(f.commands(protocol.CmdResume)) > n })
		step <- struct{}{}
	}
	<-done
	if err != nil {
		t.Fatal(err)
	}
	_ = gate.End(&screen)
	if jobBytes.String() != "1.2.3.\n4.5." || res.Reconnects != 3 {
		t.Fatalf("job bytes %q, %d reconnects", jobBytes.String(), res.Reconnects)
	}
	const want = "1.2.3.\nNOTICE: connection lost\nNOTICE: connection lost\n4.5.\nNOTICE: connection lost\n"
	if got := screen.String(); got != want {
		t.Fatalf("screen %q\nwant   %q", got, want)
	}
}

// teeOutput writes the output to the gate and keeps a copy of the job's bytes.
type teeOutput struct {
	gate *client.LineGate
	copy *lockedBuffer
}

func (w teeOutput) Write(p []byte) (int, error) {
	w.copy.Write(p)
	return w.gate.Write(p)
}

// A notice written while the job's line is open comes after that line.
func ExampleLineGate() {
	var screen strings.Builder // the output and the notices on one screen
	gate := client.NewLineGate(&screen)
	notices := gate.Notices(&screen)
	fmt.Fprint(gate, "compiling...")
	fmt.Fprintln(notices, "NOTICE: the connection broke; resumed")
	fmt.Fprint(gate, " done\nlinking")
	_ = gate.End(&screen) // the job ended inside a line: a newline first
	fmt.Print(screen.String())
	// Output:
	// compiling... done
	// NOTICE: the connection broke; resumed
	// linking
}
