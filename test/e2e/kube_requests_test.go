//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi"
)

// requestCounter counts a process's API requests by "VERB resource"
// (watches as "WATCH resource").
type requestCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		verb := r.Method
		if r.URL.Query().Get("watch") == "true" {
			verb = "WATCH"
		}
		// .../namespaces/NS/RESOURCE[/NAME[/SUBRESOURCE]]
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		res := r.URL.Path
		for i, p := range parts {
			if p == "namespaces" && i+2 < len(parts) {
				res = parts[i+2]
				if i+4 < len(parts) {
					res += "/" + parts[i+4]
				}
				break
			}
		}
		c.mu.Lock()
		c.n[verb+" "+res]++
		c.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

func (c *requestCounter) snapshot() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out, total := map[string]int{}, 0
	for k, v := range c.n {
		out[k] = v
		total += v
	}
	return out, total
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// apiserverRequests sums the API server's apiserver_request_total counter.
func apiserverRequests(ctx context.Context, t testing.TB, cs kubernetes.Interface) float64 {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatalf("read the API server's /metrics: %v", err)
	}
	var sum float64
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

// TestKubeManyJobsShareWatches runs a batch of jobs from one process the
// way a runner does (one shared kube.Watcher) and counts the API requests
// per job: the jobs share one pod watch and one event watch, and each job
// costs its own creates, attach and delete only (no pod GET). Every job's
// wait sees its pod's events, those from before the shared watch started
// included. The numbers are logged
// (this process's requests by kind, and the API server's
// apiserver_request_total before and after, which also counts whatever
// else runs on the node meanwhile).
func TestKubeManyJobsShareWatches(t *testing.T) {
	const jobs = 8
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "share")

	counter := &requestCounter{n: map[string]int{}}
	cfg := rest.CopyConfig(c.Config)
	cfg.Wrap(counter.wrap)
	cs, err := kubeapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wt := kube.NewWatcher(cs)
	defer wt.Close()
	before := apiserverRequests(ctx, t, c.Client)
	start := time.Now()

	errs := make(chan error, jobs)
	for i := range jobs {
		go func() {
			errs <- func() error {
				objs, err := kube.Build(kubeSpec(ns, BusyboxImage, fmt.Sprintf("echo job %d\n", i)))
				if err != nil {
					return err
				}
				progress := &safeBuffer{}
				pod, err := kube.Create(ctx, cs, objs, slog.New(slog.NewTextHandler(progress, nil)))
				if err != nil {
					return err
				}
				defer func() {
					dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
					defer cancel()
					_ = pod.Delete(dctx)
				}()
				pod.Watcher = wt
				if err := pod.WaitRunning(ctx, kube.WaitOptions{Timeout: 3 * time.Minute}); err != nil {
					return err
				}
				// The scheduler's event comes first, before the shared
				// event watch has started for the first jobs: each job
				// still sees it.
				if !strings.Contains(string(progress.Bytes()), "reason=Scheduled") {
					return fmt.Errorf("job %d: its wait saw no Scheduled event of its pod:\n%s", i, progress.Bytes())
				}
				out := &safeBuffer{}
				res, err := client.Run(ctx, pod.Transport(cfg, kube.TransportOptions{Logger: kubeLogger(t)}), objs.Job,
					client.Options{Output: out, ExitShim: true})
				if err != nil || res.ExitCode != 0 {
					return fmt.Errorf("job %d: %v (exit %d)", i, err, res.ExitCode)
				}
				if got, want := string(out.Bytes()), fmt.Sprintf("job %d\n", i); got != want {
					return fmt.Errorf("job %d printed %q, want %q", i, got, want)
				}
				return nil
			}()
		}()
	}
	for range jobs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(start)
	after := apiserverRequests(ctx, t, c.Client)
	byKind, total := counter.snapshot()
	var kinds []string
	for k, v := range byKind {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(kinds)
	t.Logf("%d jobs in %v: this process made %d API requests, %.1f per job: %s", jobs, took.Round(time.Millisecond),
		total, float64(total)/jobs, strings.Join(kinds, " "))
	t.Logf("API server apiserver_request_total: +%.0f during the batch, %.1f per job (node-wide: includes the node's own and any other test's requests)",
		after-before, (after-before)/jobs)
	if w, e := byKind["WATCH pods"], byKind["WATCH events"]; w != 1 || e != 1 {
		t.Fatalf("%d pod watches and %d event watches for %d jobs in one namespace; want one of each", w, e, jobs)
	}
	// The pods' states come from the shared watch: no job reads its pod
	// (the GETs are the informer's list), neither while waiting nor for
	// its first attach.
	if g := byKind["GET pods"]; g >= jobs {
		t.Fatalf("%d pod GETs for %d jobs; want no GET per job", g, jobs)
	}
}
