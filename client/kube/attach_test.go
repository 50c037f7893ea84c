package kube_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
	"github.com/tether-ci/tether/internal/testing/syncbuf"

	"k8s.io/client-go/kubernetes"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/testing/attachserver"
	"github.com/tether-ci/tether/internal/testing/faultproxy"
	"github.com/tether-ci/tether/protocol"
)

const ns = "ci"

// env is an attach server with shims behind it.
type env struct {
	srv *attachserver.Server
	dir string
}

func newEnv(t *testing.T, opts attachserver.Options) *env {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	srv, err := attachserver.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return &env{srv: srv, dir: t.TempDir()}
}

// shim starts a tether-shim as container "build" of pod and returns it.
func (e *env) shim(t *testing.T, pod string, args ...string) *attachserver.Container {
	t.Helper()
	spool := filepath.Join(e.dir, pod+"-spool")
	args = append([]string{"--spool-dir=" + spool, "--shell=/bin/sh", "--log-level=debug"}, args...)
	c, err := e.srv.AddContainer(ns, pod, kube.BuildContainer, exec.Command(shimPath, args...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Kill()
		if t.Failed() {
			t.Logf("shim %s stderr (tail):\n%s", pod, c.Stderr())
		}
	})
	return c
}

// transport returns a transport to pod's shim through host ("" for the
// server itself).
func (e *env) transport(t *testing.T, host, pod string, proto kube.Protocol) *kube.Transport {
	t.Helper()
	cfg := e.srv.RESTConfig(host)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &kube.Transport{Config: cfg, Client: clientset.Wrap(cs), Namespace: ns, Pod: pod, Container: kube.BuildContainer,
		Options: kube.TransportOptions{Protocol: proto, Logger: testLogger(t), ConnectTimeout: 3 * time.Second}}
}

// script writes an executable script and returns its path.
func (e *env) script(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// data writes n deterministic bytes that exercise the encoding (binary
// bytes, CR, long lines) to a file and returns its path and content.
func (e *env) data(t *testing.T, name string, n int, seed uint64) (string, []byte) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	var b bytes.Buffer
	for b.Len() < n {
		switch rng.IntN(10) {
		case 0: // binary junk
			for range rng.IntN(64) {
				b.WriteByte(byte(rng.IntN(256)))
			}
		case 1: // a line longer than a record
			b.Write(bytes.Repeat([]byte("long-"), 4000+rng.IntN(4000)))
			b.WriteByte('\n')
		case 2:
			b.WriteString("progress 10%\rprogress 50%\rprogress 100%\n")
		default:
			fmt.Fprintf(&b, "line %d: ünïcödé and a tab\t%x\n", b.Len(), rng.Uint64())
		}
	}
	out := b.Bytes()[:n]
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, out
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// quietLogger drops everything below warnings (for tests with many cuts).
func quietLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelError}))
}

func sessionOptions(t *testing.T, out *syncbuf.Buffer, events *eventLog) client.Options {
	return client.Options{
		Output:           out,
		Events:           events.add,
		Logger:           quietLogger(t),
		ReconnectMin:     5 * time.Millisecond,
		ReconnectMax:     100 * time.Millisecond,
		ReconnectTimeout: 60 * time.Second,
		ExitShim:         true,
	}
}

// eventLog records session events.
type eventLog struct {
	mu     sync.Mutex
	events []client.Event
}

func (l *eventLog) add(ev client.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
}

func (l *eventLog) count(k client.EventKind) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ev := range l.events {
		if ev.Kind == k {
			n++
		}
	}
	return n
}

// TestRunOverAttach runs a job through each attach protocol, and through
// the WebSocket→SPDY fallback against a server without the stream
// translator.
func TestRunOverAttach(t *testing.T) {
	for _, tc := range []struct {
		name        string
		noWebSocket bool
		proto       kube.Protocol
		want        map[string]bool // protocols that must have been used
	}{
		{"websocket", false, kube.ProtocolWebSocket, map[string]bool{"websocket": true}},
		{"spdy", false, kube.ProtocolSPDY, map[string]bool{"spdy": true}},
		{"auto", false, kube.ProtocolAuto, map[string]bool{"websocket": true}},
		{"fallback", true, kube.ProtocolAuto, map[string]bool{"websocket-legacy": true, "spdy": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, attachserver.Options{NoWebSocket: tc.noWebSocket})
			c := e.shim(t, "pod-"+tc.name)
			dataPath, data := e.data(t, "data.bin", 300_000, 7)
			a := e.script(t, "a.sh", "cat "+dataPath+"\nprintf 'partial'\n")
			b := e.script(t, "b.sh", "echo from b >&2\nexit 3\n")
			after := e.script(t, "after.sh", "printf 'after\\n'\n")
			out, events := &syncbuf.Buffer{}, &eventLog{}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res, err := client.Run(ctx, e.transport(t, "", "pod-"+tc.name, tc.proto),
				client.Job{Scripts: []string{a, b}, After: []string{after}}, sessionOptions(t, out, events))
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			want := append(append([]byte{}, data...), "partialfrom b\nafter\n"...)
			if got := out.Bytes(); !bytes.Equal(got, want) {
				t.Fatalf("output differs: got %d bytes, want %d (first difference at %d)", len(got), len(want), firstDiff(got, want))
			}
			if res.ExitCode != 3 || res.FailedScript != b || len(res.Statuses) != 3 {
				t.Fatalf("result = exit %d, failed %q, %d statuses; want exit 3, failed %q, 3 statuses",
					res.ExitCode, res.FailedScript, len(res.Statuses), b)
			}
			for p := range tc.want {
				if e.srv.AttachRequests(p) == 0 {
					t.Errorf("no %s attach request reached the server", p)
				}
			}
			for _, p := range []string{"websocket", "spdy", "websocket-legacy"} {
				if !tc.want[p] && e.srv.AttachRequests(p) > 0 {
					t.Errorf("%d unexpected %s attach requests", e.srv.AttachRequests(p), p)
				}
			}
			select {
			case <-c.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the shim did not exit after the exit command")
			}
			// The container ended: without the log replay (tested below),
			// the transport says the shim is gone.
			tr := e.transport(t, "", "pod-"+tc.name, tc.proto)
			tr.Options.NoLogReplay = true
			_, err = tr.Connect(ctx)
			if !errors.Is(err, client.ErrShimGone) {
				t.Fatalf("Connect after the shim exited: %v; want an error wrapping ErrShimGone", err)
			}
		})
	}
}

// TestAttachSurvivesCuts cuts the connections between the client and the
// API server at random points, mid-frame, during a job: the output must be
// byte-identical and the exit code right, for both protocols.
func TestAttachSurvivesCuts(t *testing.T) {
	for _, tc := range []struct {
		name        string
		noWebSocket bool
		proto       kube.Protocol
	}{
		{"websocket", false, kube.ProtocolWebSocket},
		{"spdy", false, kube.ProtocolSPDY},
		{"fallback", true, kube.ProtocolAuto},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, attachserver.Options{NoWebSocket: tc.noWebSocket, Logger: quietLogger(t)})
			pod := "cut-" + tc.name
			e.shim(t, pod)
			proxy, err := faultproxy.Start(strings.TrimPrefix(e.srv.URL, "http://"), faultproxy.Options{
				MinBytes: 4 << 10, MaxBytes: 256 << 10,
				MinLife: 20 * time.Millisecond, MaxLife: 400 * time.Millisecond,
				Seed: uint64(len(tc.name)) * 7919,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer proxy.Close()
			dataPath, data := e.data(t, "data.bin", 3_000_000, 11)
			big := e.script(t, "big.sh", "cat "+dataPath+"\n")
			slow := e.script(t, "slow.sh", "i=0\nwhile [ $i -lt 40 ]; do printf \"tick $i \"; sleep 0.02; i=$((i+1)); done\nexit 42\n")
			after := e.script(t, "after.sh", "echo after-script\n")
			out, events := &syncbuf.Buffer{}, &eventLog{}
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			tr := e.transport(t, "http://"+proxy.Addr(), pod, tc.proto)
			tr.Options.Logger = quietLogger(t)
			res, err := client.Run(ctx, tr, client.Job{Scripts: []string{big, slow}, After: []string{after}},
				sessionOptions(t, out, events))
			if err != nil {
				t.Fatalf("Run through the fault proxy (%d cuts): %v", proxy.Cuts(), err)
			}
			var want bytes.Buffer
			want.Write(data)
			for i := range 40 {
				fmt.Fprintf(&want, "tick %d ", i)
			}
			want.WriteString("after-script\n")
			if got := out.Bytes(); !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("output differs after %d cuts: got %d bytes, want %d (first difference at %d)",
					proxy.Cuts(), len(got), want.Len(), firstDiff(got, want.Bytes()))
			}
			if res.ExitCode != 42 || res.FailedScript != slow {
				t.Fatalf("exit code %d (failed %q), want 42 (%q)", res.ExitCode, res.FailedScript, slow)
			}
			if proxy.Cuts() < 5 || res.Reconnects < 3 {
				t.Fatalf("only %d cuts and %d reconnects: the test did not exercise resume", proxy.Cuts(), res.Reconnects)
			}
			if n := events.count(client.EventDisconnected); n != res.Reconnects {
				t.Errorf("%d disconnect events for %d reconnects", n, res.Reconnects)
			}
			t.Logf("%s: %d cuts, %d reconnects, %d bytes", tc.name, proxy.Cuts(), res.Reconnects, want.Len())
		})
	}
}

// TestAttachFromNewSession submits a job from one "process" that dies
// mid-job (its connection closed with no cancel), and follows it with
// client.Attach from another, which gets the whole output and the exit
// code.
func TestAttachFromNewSession(t *testing.T) {
	e := newEnv(t, attachserver.Options{})
	e.shim(t, "resume")
	run := e.script(t, "run.sh", "i=0\nwhile [ $i -lt 20 ]; do echo \"step $i\"; sleep 0.02; i=$((i+1)); done\nexit 5\n")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	first := e.transport(t, "", "resume", kube.ProtocolAuto)
	conn, err := first.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := protocol.AppendCommand(nil, protocol.Command{Cmd: protocol.CmdJob, ID: "j1", Scripts: []string{run}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(cmd); err != nil {
		t.Fatal(err)
	}
	// Read until the job produced some output, then "die".
	buf := make([]byte, 4096)
	var seen []byte
	for !bytes.Contains(seen, []byte("step 3")) {
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("first connection: %v", err)
		}
		seen = append(seen, buf[:n]...)
	}
	_ = conn.Close()

	out, events := &syncbuf.Buffer{}, &eventLog{}
	res, err := client.Attach(ctx, e.transport(t, "", "resume", kube.ProtocolAuto), 0, sessionOptions(t, out, events))
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	var want strings.Builder
	for i := range 20 {
		fmt.Fprintf(&want, "step %d\n", i)
	}
	if got := string(out.Bytes()); got != want.String() {
		t.Fatalf("Attach output:\n%q\nwant:\n%q", got, want.String())
	}
	if res.ExitCode != 5 {
		t.Fatalf("Attach exit code %d, want 5", res.ExitCode)
	}
}

// TestPartialLineThroughAttach checks that output without a newline
// crosses the attach path while the script is still running: the script
// prints a dot and then waits until the test has received it.
func TestPartialLineThroughAttach(t *testing.T) {
	for _, proto := range []kube.Protocol{kube.ProtocolWebSocket, kube.ProtocolSPDY} {
		t.Run(string(proto), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, attachserver.Options{})
			e.shim(t, "dots")
			gate := filepath.Join(e.dir, "go")
			dots := e.script(t, "dots.sh", "for i in 1 2 3 4 5; do printf .; while [ ! -e "+gate+"$i ]; do sleep 0.005; done; done\n")
			w := &chanWriter{ch: make(chan []byte, 16)}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			opts := sessionOptions(t, nil, &eventLog{})
			opts.Output = w
			type outcome struct {
				res client.Result
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := client.Run(ctx, e.transport(t, "", "dots", proto), client.Job{Scripts: []string{dots}}, opts)
				done <- outcome{res, err}
			}()
			var got []byte
			var worst time.Duration
			released := time.Now()
			for i := 1; i <= 5; i++ {
				for !bytes.Equal(got, bytes.Repeat([]byte("."), i)) {
					select {
					case p := <-w.ch:
						got = append(got, p...)
					case <-time.After(20 * time.Second):
						t.Fatalf("dot %d never arrived while the script waited for it (got %q)", i, got)
					}
				}
				worst = max(worst, time.Since(released))
				if err := os.WriteFile(gate+fmt.Sprint(i), nil, 0o644); err != nil {
					t.Fatal(err)
				}
				released = time.Now()
			}
			o := <-done
			if o.err != nil || o.res.ExitCode != 0 {
				t.Fatalf("Run: %v, exit %d", o.err, o.res.ExitCode)
			}
			t.Logf("%s: slowest dot arrived %v after the script could print it", proto, worst)
		})
	}
}

// chanWriter sends every write to a channel.
type chanWriter struct{ ch chan []byte }

func (w *chanWriter) Write(p []byte) (int, error) {
	w.ch <- bytes.Clone(p)
	return len(p), nil
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// submitAndLeave sends a job and an exit command through a fresh attach
// and closes it at once, like a runner that died right after submitting.
func submitAndLeave(ctx context.Context, t *testing.T, tr *kube.Transport, id string, scripts ...string) {
	t.Helper()
	conn, err := tr.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var cmds []byte
	for _, c := range []protocol.Command{{Cmd: protocol.CmdJob, ID: id, Scripts: scripts}, {Cmd: protocol.CmdExit}} {
		if cmds, err = protocol.AppendCommand(cmds, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Write(cmds); err != nil {
		t.Fatal(err)
	}
	// Stay until the shim's output ends (it exits after the job): closing
	// at once could cancel the attach before the commands left the client.
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	_, _ = io.Copy(io.Discard, conn)
	_ = conn.Close()
}

// TestAttachReplaysLogOfEndedShim follows a job whose shim has already
// exited: the session reads the container log, so Attach still gets
// the whole output and the exit code. A rotated log and a disabled replay
// give a clear "no result" instead.
func TestAttachReplaysLogOfEndedShim(t *testing.T) {
	for _, tc := range []struct {
		name     string
		logLimit int
		noReplay bool
		wantErr  string
	}{
		{name: "replay"},
		{name: "rotated", logLimit: 300, wantErr: "rotated"},
		{name: "disabled", noReplay: true, wantErr: "terminated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, attachserver.Options{LogLimit: tc.logLimit})
			c := e.shim(t, "ended")
			run := e.script(t, "run.sh", "i=0\nwhile [ $i -lt 20 ]; do echo \"step $i\"; i=$((i+1)); done\nprintf 'no newline'\nexit 6\n")
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			submitAndLeave(ctx, t, e.transport(t, "", "ended", kube.ProtocolAuto), "j-ended", run)
			select {
			case <-c.Done():
			case <-time.After(20 * time.Second):
				t.Fatal("the shim did not exit after its job")
			}
			tr := e.transport(t, "", "ended", kube.ProtocolAuto)
			tr.Options.NoLogReplay = tc.noReplay
			out := &syncbuf.Buffer{}
			res, err := client.Attach(ctx, tr, 0, sessionOptions(t, out, &eventLog{}))
			if tc.wantErr != "" {
				if !errors.Is(err, client.ErrNoResult) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Attach: %v; want ErrNoResult mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Attach: %v", err)
			}
			var want strings.Builder
			for i := range 20 {
				fmt.Fprintf(&want, "step %d\n", i)
			}
			want.WriteString("no newline")
			if got := string(out.Bytes()); got != want.String() {
				t.Fatalf("output %q, want %q", got, want.String())
			}
			if res.ExitCode != 6 || res.Exit == nil || res.Exit.Reason != protocol.ReasonExitCommand {
				t.Fatalf("exit code %d, final record %+v; want 6 and reason %s", res.ExitCode, res.Exit, protocol.ReasonExitCommand)
			}
		})
	}
}

// TestRunRecoversTailFromLog: the API server becomes unreachable during a
// job, the shim hits its deadline and exits meanwhile; once the API server
// is back, the session gets the rest of the output and the shim's final
// record from the container log.
func TestRunRecoversTailFromLog(t *testing.T) {
	e := newEnv(t, attachserver.Options{Logger: quietLogger(t)})
	c := e.shim(t, "tail", "--deadline=3", "--grace=200ms")
	proxy, err := faultproxy.Start(strings.TrimPrefix(e.srv.URL, "http://"), faultproxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	script := e.script(t, "script.sh", "echo before\nsleep 1\necho while-away\nsleep 60\necho never\n")
	out := &syncbuf.Buffer{}
	go func() {
		for !bytes.Contains(out.Bytes(), []byte("before\n")) {
			time.Sleep(10 * time.Millisecond)
		}
		proxy.SetBlocked(true)
		proxy.CutAll()
		<-c.Done()
		proxy.SetBlocked(false)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr := e.transport(t, "http://"+proxy.Addr(), "tail", kube.ProtocolAuto)
	tr.Options.Logger = quietLogger(t)
	res, err := client.Run(ctx, tr, client.Job{Scripts: []string{script}}, sessionOptions(t, out, &eventLog{}))
	if !errors.Is(err, client.ErrShimExited) {
		t.Fatalf("Run: %v; want ErrShimExited (the deadline, from the log)", err)
	}
	if res.Exit == nil || res.Exit.Reason != protocol.ReasonDeadline || res.ExitCode != 124 {
		t.Fatalf("final record %+v, exit code %d; want the deadline and 124", res.Exit, res.ExitCode)
	}
	if got := string(out.Bytes()); got != "before\nwhile-away\n" {
		t.Fatalf("output %q; want the line written while the client was away too", got)
	}
}
