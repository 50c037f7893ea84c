package kube

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/remotecommand"
)

// stuckExecutor establishes its streams, then ignores its context until
// release is closed (a stream client-go cannot end).
type stuckExecutor struct{ release chan struct{} }

func (e stuckExecutor) Stream(remotecommand.StreamOptions) error { return nil }

func (e stuckExecutor) StreamWithContext(_ context.Context, o remotecommand.StreamOptions) error {
	_, _ = o.Stdin.Read(make([]byte, 1))
	<-e.release
	return nil
}

// Close says so when the attach stream outlives its wait, instead of
// reporting a clean close.
func TestConnCloseReportsAStreamThatDoesNotEnd(t *testing.T) {
	e := stuckExecutor{release: make(chan struct{})}
	defer close(e.release)
	c, err := dial(context.Background(), e, 5*time.Second, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c.closeWait = 50 * time.Millisecond
	err = c.Close()
	if err == nil || !strings.Contains(err.Error(), "did not end") {
		t.Fatalf("Close: %v; want an error saying the stream did not end", err)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil || err == io.EOF {
		t.Fatalf("Read after Close: %v; want the closed-connection error", err)
	}
}
