package actionsrunner

import (
	"slices"
	"testing"
)

// The hook's streams are cut into lines as StreamReader.ReadLine cuts them,
// whatever the writes' boundaries, and a batch's stderr lines go into the
// log before its stdout lines (ProcessOutput).
func TestHookStreamsReadLikeProcessInvoker(t *testing.T) {
	var log StepLog
	// The loop starts after the first writes: they are one batch.
	h := &hookStreams{log: &log, signal: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{})}
	out, errw := h.writers()
	_, _ = out.Write([]byte("out one\r"))
	_, _ = errw.Write([]byte("err one\nerr \xfftwo\r"))
	go h.loop()
	_, _ = out.Write([]byte("\nout two\rout three"))
	_, _ = errw.Write([]byte("\n::error::bad\n"))
	out.Close()
	errw.Close()
	h.finish()
	for _, want := range [][]string{
		{"err one", "out one"},            // the first batch: stderr first
		{"err \ufffdtwo", "##[error]bad"}, // stderr in its own order
		{"out one", "out two", "out three"},
	} {
		if !inOrder(log.Lines, want) {
			t.Errorf("log %q: want %q in that order", log.Lines, want)
		}
	}
	if len(log.Lines) != 6 {
		t.Errorf("log %q: want 6 lines", log.Lines)
	}
}

// inOrder reports whether want's lines appear in lines in that order.
func inOrder(lines, want []string) bool {
	i := 0
	for _, w := range want {
		j := slices.Index(lines[i:], w)
		if j < 0 {
			return false
		}
		i += j + 1
	}
	return true
}
