package kube

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
)

// budgets returns how many PodDisruptionBudgets the namespace holds.
func budgets(t *testing.T, fc *fake.Clientset, ns string) int {
	t.Helper()
	l, err := fc.PolicyV1().PodDisruptionBudgets(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}

// A claimed pod's budget is created once the job's attach delivered its
// first bytes, not while the API server connects that attach.
func TestProtectWaitsForTheJobsFirstBytes(t *testing.T) {
	pod := warmRunning(t, poolSpec(), "small", time.Now())
	fc := fake.NewClientset(pod)
	started := make(chan struct{})
	pr := startProtect(context.Background(), clientset.Wrap(fc), pod, started, slog.New(slog.DiscardHandler))
	select {
	case <-pr.done:
		t.Fatal("the budget's create ended before the job's attach delivered its first bytes")
	case <-time.After(100 * time.Millisecond):
	}
	if n := budgets(t, fc, pod.Namespace); n != 0 {
		t.Fatalf("%d budgets before the job's first bytes, want none yet", n)
	}
	close(started)
	<-pr.done
	if pr.err != nil {
		t.Fatal(pr.err)
	}
	if n := budgets(t, fc, pod.Namespace); n != 1 {
		t.Fatalf("%d budgets once the job's first bytes came, want 1", n)
	}
}

// An attach that never delivers does not leave the pod unprotected: the
// budget is created afterStartWait after the claim.
func TestProtectDoesNotWaitForeverForTheJobsFirstBytes(t *testing.T) {
	pod := warmRunning(t, poolSpec(), "small", time.Now())
	fc := fake.NewClientset(pod)
	began := time.Now()
	pr := startProtect(context.Background(), clientset.Wrap(fc), pod, make(chan struct{}), slog.New(slog.DiscardHandler))
	select {
	case <-pr.done:
	case <-time.After(afterStartWait + 10*time.Second):
		t.Fatal("the budget's create still waits for an attach that never delivers")
	}
	if waited := time.Since(began); waited < afterStartWait {
		t.Errorf("the budget's create began after %v, want afterStartWait (%v)", waited, afterStartWait)
	}
	if n := budgets(t, fc, pod.Namespace); n != 1 {
		t.Fatalf("%d budgets, want 1", n)
	}
}

// firstBytesConn tells once its connection delivered data, not before.
func TestFirstBytesConn(t *testing.T) {
	r, w := io.Pipe()
	c := &firstBytesConn{Conn: pipeConn{r}, delivered: make(chan struct{})}
	go func() { _, _ = w.Write([]byte("x")) }()
	select {
	case <-c.delivered:
		t.Fatal("delivered before any Read returned data")
	case <-time.After(20 * time.Millisecond):
	}
	if n, err := c.Read(make([]byte, 8)); n != 1 || err != nil {
		t.Fatalf("Read = %d, %v", n, err)
	}
	select {
	case <-c.delivered:
	default:
		t.Fatal("not delivered after a Read returned data")
	}
	_ = w.Close()
}

// pipeConn is a client.Conn reading from a pipe.
type pipeConn struct{ r *io.PipeReader }

func (p pipeConn) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p pipeConn) Write(b []byte) (int, error) { return len(b), nil }
func (p pipeConn) Close() error                { return p.r.Close() }

var _ client.Conn = pipeConn{}
