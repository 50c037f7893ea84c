//go:build e2e

package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi"
	"github.com/tether-ci/tether/protocol"
)

// logStreamCounter counts a process's pods/log requests by their stream
// field ("" for none).
type logStreamCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *logStreamCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if strings.HasSuffix(r.URL.Path, "/log") {
			c.mu.Lock()
			c.n[r.URL.Query().Get("stream")]++
			c.mu.Unlock()
		}
		return rt.RoundTrip(r)
	})
}

func (c *logStreamCounter) get(stream string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[stream]
}

// blockBroken reports whether a block record in log (a container log of
// stdout and stderr together) does not end in a newline after its length:
// a line of stderr was logged inside it.
func blockBroken(log []byte) bool {
	for len(log) > 0 {
		line := log
		if i := bytes.IndexByte(log, '\n'); i >= 0 {
			line = log[:i+1]
		}
		rec, _, err := protocol.Parse(line, nil)
		if err != nil || rec.Type != protocol.TypeBlock {
			log = log[len(line):]
			continue
		}
		if rec.Size > len(log) || log[rec.Size-1] != '\n' {
			return true
		}
		log = log[rec.Size:]
	}
	return false
}

// TestKubeLogReplayWithDiagnosticsInBlocks: a job's script makes the shim
// (PID 1 of the build container) write diagnostics to its stderr while its
// bulk output is in flight as block records (it sends the shim SIGUSR1,
// which the shim logs as it forwards it; the script ignores it). Read back
// from the container log once the shim is gone, the output is exact where
// the API server returns the log's stdout alone (PodLogsQuerySplitStreams).
// Where it refuses the stream field (this node: Kubernetes 1.34, the gate
// off), the transport reads the whole log instead, and a diagnostic the
// runtime logged inside a block gives an error saying so instead of
// shifted bytes (a merged log cannot be read exactly: only a block whose
// shifted last byte happens to be a newline would go unnoticed).
func TestKubeLogReplayWithDiagnosticsInBlocks(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "logreplay")
	line := strings.Repeat("0123456789", 10)
	const bursts, lines = 10, 2000
	script := fmt.Sprintf("trap '' USR1\nr=0\nwhile [ $r -lt %d ]; do\n  yes %s | head -n %d &\n  kill -USR1 1\n  wait\n  r=$((r+1))\ndone\n",
		bursts, line, lines)
	want := strings.Repeat(line+"\n", bursts*lines)
	pod, objs := startPod(ctx, t, c, kubeSpec(ns, BusyboxImage, script))

	live := &safeBuffer{}
	res, err := client.Run(ctx, pod.Transport(c.Config, kube.TransportOptions{}), objs.Job,
		client.Options{Output: live, Logger: kubeLogger(t), ExitShim: true})
	if err != nil || res.ExitCode != 0 || string(live.Bytes()) != want {
		t.Fatalf("live run: %v, exit %d, %d bytes of output (want %d)", err, res.ExitCode, live.Len(), len(want))
	}
	c.WaitPodPhase(ctx, t, ns, pod.Name, corev1.PodSucceeded, 60*time.Second)

	whole, err := c.Client.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{Container: kube.BuildContainer}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("read the container log: %v", err)
	}
	if n := bytes.Count(whole, []byte("forwarding signal")); n == 0 {
		t.Fatalf("the shim logged no diagnostics; the test needs them in its log")
	}
	broken := blockBroken(whole)
	t.Logf("the whole log has %d bytes; a diagnostic inside a block: %v", len(whole), broken)

	counter := &logStreamCounter{n: map[string]int{}}
	cfg := rest.CopyConfig(c.Config)
	cfg.Wrap(counter.wrap)
	cs, err := kubeapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr := &kube.Transport{Config: cfg, Client: cs, Namespace: ns, Pod: pod.Name, Container: kube.BuildContainer,
		Options: kube.TransportOptions{Logger: kubeLogger(t)}}
	out := &safeBuffer{}
	res, err = client.Attach(ctx, tr, 0, client.Options{Output: out, Logger: kubeLogger(t), ReconnectTimeout: time.Minute})
	split := counter.get("") == 0
	t.Logf("log requests: %d for stdout, %d for the whole log", counter.get(corev1.LogStreamStdout), counter.get(""))
	if counter.get(corev1.LogStreamStdout) != 1 || counter.get("") > 1 {
		t.Fatalf("log requests: %d for stdout, %d for the whole log; want one for stdout, and one for the whole log only if that was refused",
			counter.get(corev1.LogStreamStdout), counter.get(""))
	}
	if split || !broken {
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("replay from the log: %v (exit %d)", err, res.ExitCode)
		}
		if got := string(out.Bytes()); got != want {
			t.Fatalf("replayed output differs at byte %d (%d bytes, want %d)", firstDiff(got, want), len(got), len(want))
		}
		return
	}
	if !errors.Is(err, client.ErrNoResult) || !strings.Contains(err.Error(), "logged inside it") {
		t.Fatalf("replay from a log with a diagnostic inside a block: %v; want ErrNoResult saying so", err)
	}
	if got := string(out.Bytes()); !strings.HasPrefix(want, got) {
		t.Fatalf("replayed output differs at byte %d before the broken block", firstDiff(got, want))
	}
}

// firstDiff returns the index of the first byte where a and b differ.
func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
