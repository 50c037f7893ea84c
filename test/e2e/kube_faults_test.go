//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi"
	"github.com/tether-ci/tether/internal/testing/faultproxy"
)

// steadyScript prints n numbered lines of about 200 bytes, one every
// pause, then exits with code.
func steadyScript(n int, pause string, code int) (script, output string) {
	script = fmt.Sprintf("i=0\nwhile [ $i -lt %d ]; do echo \"line $i %s\"; i=$((i+1)); sleep %s; done\nexit %d\n",
		n, strings.Repeat("x", 190), pause, code)
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "line %d %s\n", i, strings.Repeat("x", 190))
	}
	return script, b.String()
}

// TestKubeSurvivesConnectionCuts puts a TCP proxy between the client and
// the API server and cuts every connection through it 20 times during a
// job: the output must arrive complete and in order, the exit code right.
func TestKubeSurvivesConnectionCuts(t *testing.T) {
	c := NewCluster(t)
	for _, proto := range []kube.Protocol{kube.ProtocolWebSocket, kube.ProtocolSPDY} {
		t.Run(string(proto), func(t *testing.T) {
			ctx := t.Context()
			ns := c.NewNamespace(t, "cuts")
			script, want := steadyScript(400, "0.05", 9)
			pod, objs := startPod(ctx, t, c, kubeSpec(ns, BusyboxImage, script))

			proxy, tr := proxiedTransport(t, c, pod, kube.TransportOptions{Protocol: proto, Logger: kubeLogger(t)})

			out := &safeBuffer{}
			// Once the job prints, cut every 300 ms until 20 cuts hit an
			// open connection.
			cutsDone := cutRepeatedly(ctx, proxy, func() bool { return out.Len() > 0 }, 20, 300*time.Millisecond)
			res, err := client.Run(ctx, tr, objs.Job, client.Options{
				Output: out, Logger: kubeLogger(t), ExitShim: true,
				ReconnectMin: 50 * time.Millisecond, ReconnectMax: time.Second,
			})
			if err != nil {
				t.Fatalf("Run through the cutting proxy: %v", err)
			}
			var hits int
			select {
			case hits = <-cutsDone:
			case <-time.After(30 * time.Second):
				t.Fatal("the cutter did not finish")
			}
			if got := out.Bytes(); !bytes.Equal(got, []byte(want)) {
				t.Fatalf("output differs after %d cuts: got %d bytes, want %d", hits, len(got), len(want))
			}
			if res.ExitCode != 9 {
				t.Fatalf("exit code %d, want 9", res.ExitCode)
			}
			if hits < 20 {
				t.Fatalf("the job ended after only %d cuts; make it longer", hits)
			}
			if res.Reconnects < 10 {
				t.Fatalf("%d cuts but only %d reconnects: the cuts missed the attach", hits, res.Reconnects)
			}
			t.Logf("%s: %d cuts, %d reconnects, %d bytes exact", proto, hits, res.Reconnects, len(want))
		})
	}
}

// TestKubeSurvivesAPIServerRestart restarts kube-apiserver in the middle
// of a job: SIGTERM (it stops accepting connections), SIGKILL 3 s later (the
// attach streams it still proxied break), 2 s down, then started again. The
// session re-attaches once the API server is back and loses nothing.
func TestKubeSurvivesAPIServerRestart(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "restart")
	script, want := steadyScript(500, "0.05", 4)
	pod, objs := startPod(ctx, t, c, kubeSpec(ns, BusyboxImage, script))

	out := &safeBuffer{}
	restarted := make(chan error, 1)
	go func() {
		for out.Len() < 2000 && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
		cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot(t), "scripts", "e2e-lib", "restart-apiserver.sh"), "2", "3")
		b, err := cmd.CombinedOutput()
		t.Logf("restart-apiserver.sh:\n%s", b)
		restarted <- err
	}()
	events := &eventCounter{}
	res, err := client.Run(ctx, pod.Transport(c.Config, kube.TransportOptions{Logger: kubeLogger(t)}), objs.Job, client.Options{
		Output: out, Logger: kubeLogger(t), Events: events.add, ExitShim: true,
	})
	if rerr := <-restarted; rerr != nil {
		t.Fatalf("restarting kube-apiserver failed: %v", rerr)
	}
	if err != nil {
		t.Fatalf("Run across the API server restart: %v", err)
	}
	if got := out.Bytes(); !bytes.Equal(got, []byte(want)) {
		t.Fatalf("output differs: got %d bytes, want %d", len(got), len(want))
	}
	if res.ExitCode != 4 {
		t.Fatalf("exit code %d, want 4", res.ExitCode)
	}
	if res.Reconnects < 1 || events.disconnects() < 1 {
		t.Fatalf("%d reconnects, %d disconnect events: the restart did not break the attach", res.Reconnects, events.disconnects())
	}
	t.Logf("%d reconnects across the restart", res.Reconnects)
}

// eventCounter counts disconnect events.
type eventCounter struct {
	safe safeBuffer
}

func (e *eventCounter) add(ev client.Event) {
	if ev.Kind == client.EventDisconnected {
		_, _ = e.safe.Write([]byte{'d'})
	}
}

func (e *eventCounter) disconnects() int { return e.safe.Len() }

// TestKubeAttachFromNewProcess kills `tether run` (SIGKILL: no cleanup) in
// the middle of a job, and `tether attach` from a new process gets the
// whole output and the job's exit code, then deletes the pod.
func TestKubeAttachFromNewProcess(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "reattach")
	script, want := steadyScript(60, "0.1", 7)
	paths := writeScripts(t, []string{"job.sh", "after.sh"}, map[string]string{"job.sh": script, "after.sh": "echo after-script\n"})
	want += "after-script\n"

	run, first, _ := startTetherRun(t, c, bin, "line 10 ", "-n", ns, paths[0], "--after", paths[1])
	if err := run.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = run.Wait()
	if !strings.HasPrefix(want, string(first.Bytes())) {
		t.Fatalf("the killed run's output is not a prefix of the job's output: %q", first.Bytes())
	}

	pods, _, _ := tetherObjects(ctx, t, c, ns)
	if pods != 1 {
		t.Fatalf("%d Tether pods after the kill, want 1", pods)
	}
	list, err := c.Client.CoreV1().Pods(ns).List(ctx, tetherSelector())
	if err != nil {
		t.Fatal(err)
	}
	name := list.Items[0].Name
	c.DumpPodOnFailure(t, ns, name)

	res := runCLI(ctx, t, c, bin, "attach", "-n", ns, "--exit", name)
	t.Logf("tether attach stderr:\n%s", res.stderr)
	if res.stdout != want {
		t.Fatalf("tether attach output:\n got %q\nwant %q", res.stdout, want)
	}
	if res.code != 7 {
		t.Fatalf("tether attach exit code %d, want 7", res.code)
	}
	waitNoTetherObjects(ctx, t, c, ns, 90*time.Second)
}

// tetherSelector selects Tether's objects.
func tetherSelector() metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedByValue}
}

// TestKubeAttachAfterShimExited: the runner dies, the job finishes, the
// shim ends itself at its idle timeout; `tether attach` from a new process
// still gets the whole output and the exit code, from the container log.
func TestKubeAttachAfterShimExited(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "afterexit")
	script, want := steadyScript(30, "0.1", 7)
	paths := writeScripts(t, []string{"job.sh"}, map[string]string{"job.sh": script})

	run, _, _ := startTetherRun(t, c, bin, "line 3 ", "-n", ns, "--idle-timeout", "3s", paths[0])
	_ = run.Process.Kill()
	_ = run.Wait()

	list, err := c.Client.CoreV1().Pods(ns).List(ctx, tetherSelector())
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("%v pods (err %v), want 1", len(list.Items), err)
	}
	name := list.Items[0].Name
	c.DumpPodOnFailure(t, ns, name)
	// The job ends about 3 s later, the shim 3 s after that (idle).
	c.WaitPodPhase(ctx, t, ns, name, corev1.PodFailed, 2*time.Minute)

	// No --keep: tether attach deletes the finished job's pod itself.
	res := runCLI(ctx, t, c, bin, "attach", "-n", ns, name)
	t.Logf("tether attach stderr:\n%s", res.stderr)
	if res.stdout != want {
		t.Fatalf("tether attach output:\n got %q\nwant %q", res.stdout, want)
	}
	if res.code != 7 {
		t.Fatalf("tether attach exit code %d, want 7", res.code)
	}
	waitNoTetherObjects(ctx, t, c, ns, 90*time.Second)
}

// cutRepeatedly waits until ready reports true, then cuts every connection
// through proxy every interval until cuts of them hit at least one open
// connection (or ctx ends). The channel gets the number of hits.
func cutRepeatedly(ctx context.Context, proxy *faultproxy.Proxy, ready func() bool, cuts int, interval time.Duration) <-chan int {
	done := make(chan int, 1)
	go func() {
		for !ready() && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
		hits := 0
		for hits < cuts && ctx.Err() == nil {
			time.Sleep(interval)
			if proxy.CutAll() > 0 {
				hits++
			}
		}
		done <- hits
	}()
	return done
}

// proxiedTransport returns a transport to pod whose every connection to
// the API server (attach and API calls alike) goes through a fault proxy
// the test can cut; the proxy is closed when the test ends.
func proxiedTransport(t *testing.T, c *Cluster, pod *kube.Pod, opts kube.TransportOptions) (*faultproxy.Proxy, *kube.Transport) {
	t.Helper()
	proxy := apiFaultProxy(t, c)
	cfg := rest.CopyConfig(c.Config)
	cfg.Host = "https://" + proxy.Addr()
	cs, err := kubeapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr := pod.Transport(cfg, opts)
	tr.Client = cs
	return proxy, tr
}

// apiFaultProxy starts a fault proxy in front of the API server, closed
// when the test ends.
func apiFaultProxy(t *testing.T, c *Cluster) *faultproxy.Proxy {
	t.Helper()
	api, err := url.Parse(c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.Start(api.Host, faultproxy.Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	return proxy
}

// startTetherRun starts `tether run --image BusyboxImage --helper-image
// HelperImage ARGS...` against the cluster and returns once its stdout
// holds marker (failing the test after two minutes without it), with its
// stdout and stderr so far and still growing.
func startTetherRun(t *testing.T, c *Cluster, bin, marker string, args ...string) (*exec.Cmd, *safeBuffer, *bytes.Buffer) {
	t.Helper()
	run := exec.Command(bin, append([]string{"run", "--image", BusyboxImage, "--helper-image", HelperImage}, args...)...)
	run.Env = append(run.Environ(), "KUBECONFIG="+c.Kubeconfig)
	out := &safeBuffer{}
	runErr := &bytes.Buffer{}
	run.Stdout, run.Stderr = out, runErr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !bytes.Contains(out.Bytes(), []byte(marker)) {
		if time.Now().After(deadline) {
			_ = run.Process.Kill()
			_ = run.Wait()
			t.Fatalf("tether run produced no output in time; stderr:\n%s", runErr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return run, out, runErr
}
