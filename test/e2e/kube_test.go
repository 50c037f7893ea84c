//go:build e2e

package e2e

// The Kubernetes backend (client/kube, `tether run`, `tether attach`) on the
// real node. kube_test.go: helpers and job tests; kube_faults_test.go:
// dropped connections, an API server restart, a killed client;
// kube_lifecycle_test.go: quota, garbage collection, deadline, idle
// timeout, image errors, cancel.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
)

// repoRoot is the repository, two levels above this package.
func repoRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

// tetherCLI builds the tether CLI once per test process, into the node's
// state directory (removed with the node), and returns its path.
var tetherCLI = sync.OnceValues(func() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	dir := os.Getenv("TETHER_E2E_DIR")
	if dir == "" {
		dir = "/var/tmp/tether-e2e"
	}
	// tether-pool beside tether: `tether pool serve|status` runs it.
	cliDir := filepath.Join(dir, "cli", strconv.Itoa(os.Getpid()))
	if err := os.MkdirAll(cliDir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(cliDir, "tether")
	cmd := exec.Command("go", "build", "-trimpath", "-o", cliDir+string(filepath.Separator), "./cmd/tether", "./cmd/tether-pool")
	cmd.Dir = filepath.Join(wd, "..", "..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the tether CLI: %w\n%s", err, out)
	}
	return bin, nil
})

// buildTether returns the tether CLI built from this checkout.
func buildTether(t testing.TB) string {
	t.Helper()
	bin, err := tetherCLI()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// kubeLogger logs to the test log.
func kubeLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tlogWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type tlogWriter struct{ t testing.TB }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// kubeSpec returns a spec for the e2e node: local images only.
func kubeSpec(ns, image string, scripts ...string) kube.Spec {
	s := kube.Spec{
		Namespace:   ns,
		Image:       image,
		HelperImage: HelperImage,
		PullPolicy:  corev1.PullNever,
		Timeout:     10 * time.Minute,
		IdleTimeout: 5 * time.Minute,
		Labels:      map[string]string{E2ELabel: "true"},
	}
	for i, body := range scripts {
		s.Scripts = append(s.Scripts, kube.Script{Name: fmt.Sprintf("script%d.sh", i), Content: []byte(body)})
	}
	return s
}

// startPod builds and creates spec's pod and waits until it runs. The pod
// is deleted when the test ends.
func startPod(ctx context.Context, t testing.TB, c *Cluster, spec kube.Spec) (*kube.Pod, *kube.Objects) {
	t.Helper()
	objs, err := kube.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	pod, err := kube.Create(ctx, clientset.Wrap(c.Client), objs, kubeLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	c.DumpPodOnFailure(t, pod.Namespace, pod.Name)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = pod.Delete(ctx)
	})
	if err := pod.WaitRunning(ctx, kube.WaitOptions{Timeout: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	return pod, objs
}

// safeBuffer is a concurrency-safe output sink.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

func (s *safeBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

// cliResult is one run of the tether CLI.
type cliResult struct {
	stdout, stderr string
	code           int
}

// runCLI runs the tether CLI with args against the e2e node.
func runCLI(ctx context.Context, t testing.TB, c *Cluster, bin string, args ...string) cliResult {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run tether %v: %v", args, err)
	}
	return cliResult{stdout.String(), stderr.String(), code}
}

// writeScripts writes name→body files into a temporary directory and
// returns their paths in the order of names.
func writeScripts(t testing.TB, names []string, bodies map[string]string) []string {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, []byte(bodies[n]), 0o755); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// tetherObjects counts the pods, ConfigMaps and Secrets Tether created in ns.
func tetherObjects(ctx context.Context, t testing.TB, c *Cluster, ns string) (pods, configMaps, secrets int) {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedByValue}
	p, err := c.Client.CoreV1().Pods(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := c.Client.CoreV1().ConfigMaps(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Client.CoreV1().Secrets(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	return len(p.Items), len(cm.Items), len(s.Items)
}

// waitNoTetherObjects waits until ns holds no pod, ConfigMap or Secret of
// Tether's.
func waitNoTetherObjects(ctx context.Context, t testing.TB, c *Cluster, ns string, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c.WaitFor(ctx, t, "no Tether pods, ConfigMaps or Secrets in "+ns, func(ctx context.Context) (bool, error) {
		p, cm, s := tetherObjects(ctx, t, c, ns)
		return p+cm+s == 0, nil
	})
}

// TestKubeRunMultiScriptJob runs a job of several scripts with an
// after-script and a variable through `tether run`, in the busybox image
// (sh) and in the bash image (bash), and checks the output byte for byte,
// the exit code, and that nothing is left behind.
func TestKubeRunMultiScriptJob(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	for _, tc := range []struct {
		image, shellCheck, want string
	}{
		{BusyboxImage, "", ""},
		{BashImage, `arr=(a b c); [[ ${#arr[@]} == 3 ]] && echo "bash ${BASH_VERSINFO[0]} arrays"` + "\n", ""},
	} {
		t.Run(filepath.Base(tc.image), func(t *testing.T) {
			ctx := t.Context()
			ns := c.NewNamespace(t, "run")
			bodies := map[string]string{
				"first.sh":  "echo \"token=$TOKEN\"\nprintf 'partial '\necho to-stderr >&2\n" + tc.shellCheck,
				"second.sh": "printf 'caf\\303\\251 \\001\\r\\n'\nexit 3\n",
				"third.sh":  "echo never runs\n",
				"after.sh":  "echo \"after, token=$TOKEN\"\n",
			}
			paths := writeScripts(t, []string{"first.sh", "second.sh", "third.sh", "after.sh"}, bodies)
			res := runCLI(ctx, t, c, bin, "run", "--image", tc.image, "--helper-image", HelperImage, "-n", ns,
				"--env", "TOKEN=s3cr3t=1", "--timeout", "5m",
				paths[0], paths[1], paths[2], "--after", paths[3])
			t.Logf("stderr:\n%s", res.stderr)
			if res.code != 3 {
				t.Fatalf("exit code %d, want 3 (the failing second script's)", res.code)
			}
			shell := tc.want
			if tc.image == BashImage {
				if !strings.Contains(res.stdout, "bash 5 arrays\n") {
					t.Fatalf("the bash image's scripts did not run with bash:\n%q", res.stdout)
				}
				shell = "bash 5 arrays\n"
			}
			want := "token=s3cr3t=1\npartial to-stderr\n" + shell + "caf\xc3\xa9 \x01\r\nafter, token=s3cr3t=1\n"
			if res.stdout != want {
				t.Fatalf("stdout\n got %q\nwant %q", res.stdout, want)
			}
			// The pod is deleted at the end; its ConfigMap and Secret go
			// with it through the garbage collector.
			waitNoTetherObjects(ctx, t, c, ns, 90*time.Second)
		})
	}
}

// TestKubePartialLineArrivesWhileTheScriptWaits proves, without a clock,
// that a partial line goes through the real attach path at once: the
// script prints a piece without a newline, then waits until the test,
// having received that piece, creates a file in the container. A shim or
// client that held partial output until more output or the script's end
// would leave the script waiting for ever.
func TestKubePartialLineArrivesWhileTheScriptWaits(t *testing.T) {
	c := NewCluster(t)
	for _, proto := range []kube.Protocol{kube.ProtocolWebSocket, kube.ProtocolSPDY} {
		t.Run(string(proto), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			ns := c.NewNamespace(t, "partial")
			const pieces = 5
			script := fmt.Sprintf("i=1; while [ $i -le %d ]; do printf 'piece-%%d ' $i; "+
				"while [ ! -e /tmp/go-$i ]; do sleep 0.05; done; i=$((i+1)); done\n", pieces)
			pod, objs := startPod(ctx, t, c, kubeSpec(ns, BusyboxImage, script))
			w := &pieceWriter{seen: make(chan int, pieces)}
			type outcome struct {
				res client.Result
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := client.Run(ctx, pod.Transport(c.Config, kube.TransportOptions{Protocol: proto, Logger: kubeLogger(t)}),
					objs.Job, client.Options{Output: w, ExitShim: true})
				done <- outcome{res, err}
			}()
			for want := 1; want <= pieces; want++ {
				select {
				case got := <-w.seen:
					if got != want {
						t.Fatalf("piece %d arrived, want piece %d", got, want)
					}
				case o := <-done:
					t.Fatalf("the job ended before piece %d arrived: %v (exit %d)", want, o.err, o.res.ExitCode)
				case <-ctx.Done():
					t.Fatalf("piece %d never arrived while the script waited for it to be seen (output so far %q)", want, w.output())
				}
				if err := c.Exec(ctx, ns, pod.Name, kube.BuildContainer, "touch", fmt.Sprintf("/tmp/go-%d", want)); err != nil {
					t.Fatalf("release the script after piece %d: %v", want, err)
				}
			}
			o := <-done
			if o.err != nil || o.res.ExitCode != 0 {
				t.Fatalf("Run: %v (exit %d)", o.err, o.res.ExitCode)
			}
			if got, want := w.output(), "piece-1 piece-2 piece-3 piece-4 piece-5 "; got != want {
				t.Fatalf("output %q, want %q", got, want)
			}
		})
	}
}

// pieceWriter reports each "piece-N " as soon as it has arrived whole.
type pieceWriter struct {
	mu   sync.Mutex
	buf  []byte
	used int // buf[:used] has been reported
	seen chan int
}

func (w *pieceWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf[w.used:], ' ')
		if i < 0 {
			break
		}
		piece := string(w.buf[w.used : w.used+i])
		w.used += i + 1
		var n int
		if _, err := fmt.Sscanf(piece, "piece-%d", &n); err == nil {
			w.seen <- n
		}
	}
	return len(p), nil
}

func (w *pieceWriter) output() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

// TestKubeBigOutputExact moves 50 MB of random bytes through the real
// attach path and compares SHA-256 sums.
func TestKubeBigOutputExact(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "big")
	const size = 50 << 20
	pod, objs := startPod(ctx, t, c, kubeSpec(ns, BusyboxImage,
		fmt.Sprintf("head -c %d /dev/urandom >/tether/big && sha256sum /tether/big >/tether/big.sum\n", size),
		"cat /tether/big\n",
		"cat /tether/big.sum\n"))
	w := &splitHasher{limit: size, h: sha256.New()}
	start := time.Now()
	res, err := client.Run(ctx, pod.Transport(c.Config, kube.TransportOptions{Logger: kubeLogger(t)}), objs.Job,
		client.Options{Output: w, ExitShim: true})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run: %v (exit %d)", err, res.ExitCode)
	}
	t.Logf("50 MB in %v", time.Since(start))
	if w.n != size {
		t.Fatalf("received %d bytes of data, want %d", w.n, size)
	}
	got := hex.EncodeToString(w.h.Sum(nil))
	if want := got + "  /tether/big\n"; w.rest.String() != want {
		t.Fatalf("the pod computed %q, the client received data hashing to %s", w.rest.String(), got)
	}
}

// splitHasher hashes the first limit bytes written and keeps the rest.
type splitHasher struct {
	limit, n int64
	h        hash.Hash
	rest     bytes.Buffer
}

func (w *splitHasher) Write(p []byte) (int, error) {
	k := min(int64(len(p)), w.limit-w.n)
	w.h.Write(p[:k])
	w.n += k
	w.rest.Write(p[k:])
	return len(p), nil
}

// TestKubeRunKeep: with --keep the pod (ended) and its objects stay.
func TestKubeRunKeep(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "keep")
	paths := writeScripts(t, []string{"job.sh"}, map[string]string{"job.sh": "echo kept\n"})
	res := runCLI(ctx, t, c, bin, "run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns,
		"--env", "A=b", "--keep", paths[0])
	if res.code != 0 || res.stdout != "kept\n" {
		t.Fatalf("exit %d, stdout %q; stderr:\n%s", res.code, res.stdout, res.stderr)
	}
	pods, cms, secrets := tetherObjects(ctx, t, c, ns)
	if pods != 1 || cms != 1 || secrets != 1 {
		t.Fatalf("%d pods, %d ConfigMaps, %d Secrets after --keep; want 1 of each", pods, cms, secrets)
	}
	list, err := c.Client.CoreV1().Pods(ns).List(ctx, tetherSelector())
	if err != nil {
		t.Fatal(err)
	}
	c.WaitPodPhase(ctx, t, ns, list.Items[0].Name, corev1.PodSucceeded, time.Minute)
}
