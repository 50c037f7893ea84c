package kube_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
	"github.com/tether-ci/tether/internal/testing/attachserver"
	"github.com/tether-ci/tether/internal/testing/syncbuf"
)

// bulkWithDiagnostics is a script whose output goes in block records
// (bulk, fast) while the shim writes diagnostics to its stderr: the script
// sends the shim SIGUSR1 during each burst (the shim logs that it forwards
// it; the script ignores it). It returns the script and its exact output.
func bulkWithDiagnostics(bursts, lines int) (string, string) {
	line := strings.Repeat("0123456789", 10)
	script := fmt.Sprintf("trap '' USR1\nr=0\nwhile [ $r -lt %d ]; do\n  yes %s | head -n %d &\n  kill -USR1 $PPID\n  wait\n  r=$((r+1))\ndone\n",
		bursts, line, lines)
	return script, strings.Repeat(line+"\n", bursts*lines)
}

// runAndLeave starts pod's shim, runs script in it through a submit that
// leaves at once, and waits for the shim to exit after the job.
func runAndLeave(ctx context.Context, t *testing.T, e *env, pod, script string) *attachserver.Container {
	t.Helper()
	c := e.shim(t, pod)
	submitAndLeave(ctx, t, e.transport(t, "", pod, kube.ProtocolAuto), "j-"+pod, e.script(t, pod+".sh", script))
	select {
	case <-c.Done():
	case <-time.After(60 * time.Second):
		t.Fatal("the shim did not exit after its job")
	}
	return c
}

// After the shim is gone, the session reads its container log: stdout
// alone where the API server can split the log's streams, so diagnostics
// the shim wrote to stderr while blocks were in flight cannot break them.
func TestLogReplayReadsStdoutAlone(t *testing.T) {
	e := newEnv(t, attachserver.Options{SplitLogStreams: true})
	script, want := bulkWithDiagnostics(10, 2000)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := runAndLeave(ctx, t, e, "split", script)
	if n := bytes.Count(c.Log(), []byte("forwarding signal")); n == 0 {
		t.Fatalf("the shim logged no diagnostics; the test needs them in its log:\n%s", c.Stderr())
	}
	out := &syncbuf.Buffer{}
	res, err := client.Attach(ctx, e.transport(t, "", "split", kube.ProtocolAuto), 0, sessionOptions(t, out, &eventLog{}))
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Attach: %v (exit %d)", err, res.ExitCode)
	}
	if got := string(out.Bytes()); got != want {
		t.Fatalf("output differs from the script's at byte %d (%d bytes, want %d)", firstDiff([]byte(got), []byte(want)), len(got), len(want))
	}
	if s, all := e.srv.LogRequests("Stdout"), e.srv.LogRequests(""); s != 1 || all != 0 {
		t.Fatalf("log requests: %d for stdout, %d for the whole log; want one for stdout only", s, all)
	}
}

// An API server without PodLogsQuerySplitStreams refuses the stream field
// (422): the log is read whole instead, and the transports of the same
// Watcher's pods remember it, so the next job asks once.
func TestLogReplayWhereStreamsCannotBeSplit(t *testing.T) {
	e := newEnv(t, attachserver.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := e.srv.RESTConfig("")
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := kube.NewWatcher(clientset.Wrap(cs))
	defer w.Close()
	for i, pod := range []string{"first", "second"} {
		runAndLeave(ctx, t, e, pod, "echo from "+pod+"\nprintf 'no newline'\n")
		p := &kube.Pod{Client: clientset.Wrap(cs), Namespace: ns, Name: pod, Container: kube.BuildContainer, Watcher: w}
		tr := p.Transport(cfg, kube.TransportOptions{Logger: testLogger(t), ConnectTimeout: 3 * time.Second})
		out := &syncbuf.Buffer{}
		res, err := client.Attach(ctx, tr, 0, sessionOptions(t, out, &eventLog{}))
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%s: Attach: %v (exit %d)", pod, err, res.ExitCode)
		}
		if got, want := string(out.Bytes()), "from "+pod+"\nno newline"; got != want {
			t.Fatalf("%s: output %q, want %q", pod, got, want)
		}
		// The first job asks for stdout (refused) and then the whole log;
		// the second knows.
		if s, all := e.srv.LogRequests("Stdout"), e.srv.LogRequests(""); s != 1 || all != i+1 {
			t.Fatalf("after job %d: log requests %d for stdout, %d for the whole log; want 1 and %d", i+1, s, all, i+1)
		}
	}
}
