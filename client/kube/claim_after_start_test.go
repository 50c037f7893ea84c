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

// A claimed pod's budget is created once the job's first output came,
// not while the API server connects the job's attach or the shim starts
// its first script.
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

// jobStartConn tells once the shim's stream carries the job's first
// output (or any record past the shim's answers and a script's begin),
// however the reads split it, and not before.
func TestJobStartConn(t *testing.T) {
	answers := `r - {"seq":0}` + "\n" + `h 0 {"version":3}` + "\n" + `a - {}` + "\n" + `b 40 {"script":"/tether/files/00-echo.sh"}` + "\n"
	for _, c := range []struct {
		name    string
		reads   []string
		started int // the read after which started is closed; -1 never
	}{
		{"answers, then output", []string{answers, "o 90 hello\n"}, 1},
		{"all in one read", []string{answers + "o 90 hello\n"}, 0},
		{"a partial line", []string{answers, "p 90 hel"}, 1},
		{"a block record", []string{answers, "d 90 5\nhello\n"}, 1},
		{"a script that prints nothing", []string{answers, `s 90 {"exit":0}` + "\n"}, 1},
		{"the type byte in a read of its own", []string{answers[:10], answers[10:], "o", " 90 hello\n"}, 2},
		{"answers only", []string{answers[:7], answers[7:]}, -1},
		{"an answer's payload holds record letters", []string{`r - {"o":"d"}` + "\n"}, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, w := io.Pipe()
			js := &jobStartConn{Conn: pipeConn{r}, started: make(chan struct{})}
			go func() {
				for _, s := range c.reads {
					_, _ = w.Write([]byte(s))
				}
				_ = w.Close()
			}()
			buf := make([]byte, 4096)
			for i, want := range c.reads {
				n, err := js.Read(buf)
				if err != nil || string(buf[:n]) != want {
					t.Fatalf("read %d = %q, %v; want %q (the wrapper passes the bytes on as they are)", i, buf[:n], err, want)
				}
				select {
				case <-js.started:
					if c.started < 0 || i < c.started {
						t.Fatalf("started after read %d, want %d", i, c.started)
					}
				default:
					if c.started >= 0 && i >= c.started {
						t.Fatalf("not started after read %d", i)
					}
				}
			}
		})
	}
}

// pipeConn is a client.Conn reading from a pipe.
type pipeConn struct{ r *io.PipeReader }

func (p pipeConn) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p pipeConn) Write(b []byte) (int, error) { return len(b), nil }
func (p pipeConn) Close() error                { return p.r.Close() }

var _ client.Conn = pipeConn{}
