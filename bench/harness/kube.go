package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi"
)

// kubeJobsCommand is the harness's argument that makes it the
// one-process, many-jobs client (its memory is measured on its own).
const kubeJobsCommand = "kube-jobs"

// kubeHeldCommand is kube-jobs with jobs that stay attached: each script
// sleeps heldFor before its last output, so every job's session is
// attached at once, as a runner's jobs are for most of their life.
const kubeHeldCommand = "kube-jobs-held"

// heldFor is how long a held job's script sleeps before its last output.
const heldFor = 20 * time.Second

// kubeEnv reaches the node through client/kube.
type kubeEnv struct {
	cfg      *rest.Config
	cs       kubeapi.Interface
	ns       string
	requests *requestCounter // every API request this process makes
	// watcher follows every job's pod and events: one pod and one event
	// informer for the namespace, as a runner shares them.
	watcher *kube.Watcher
	images  nodeImages
}

func newKubeEnv(kubeconfig string, images nodeImages) (*kubeEnv, error) {
	// client-go's klog reports a WebSocket the session closed on purpose
	// as an error; the session reports real trouble itself.
	klog.SetSlogLogger(slog.New(slog.DiscardHandler))
	cfg, ns, err := kube.LoadConfig(kube.ConfigOptions{Kubeconfig: kubeconfig})
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 200, 400 // 100 jobs at once
	requests := &requestCounter{}
	cfg.Wrap(requests.wrap)
	cs, err := kubeapi.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("build the Kubernetes client: %w", err)
	}
	return &kubeEnv{cfg: cfg, cs: cs, ns: ns, requests: requests, watcher: kube.NewWatcher(cs), images: images}, nil
}

// runJob runs one job in a pod of the build image and deletes the pod. running,
// if set, is called once the pod runs, before the session starts.
func (k *kubeEnv) runJob(ctx context.Context, name string, script []byte, out io.Writer, running func(*kube.Pod) error) (client.Result, error) {
	objs, err := kube.Build(kube.Spec{
		Namespace:   k.ns,
		Image:       k.images.build,
		HelperImage: k.images.helper,
		PullPolicy:  corev1.PullNever, // no registry: images are imported
		Scripts:     []kube.Script{{Name: name, Content: script}},
		Timeout:     10 * time.Minute,
	})
	if err != nil {
		return client.Result{}, err
	}
	pod, err := kube.Create(ctx, k.cs, objs, nil)
	if err != nil {
		return client.Result{}, err
	}
	pod.Watcher = k.watcher
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = pod.Delete(dctx)
	}()
	if err := pod.WaitRunning(ctx, kube.WaitOptions{}); err != nil {
		return client.Result{}, err
	}
	if running != nil {
		if err := running(pod); err != nil {
			return client.Result{}, err
		}
	}
	return client.Run(ctx, pod.Transport(k.cfg, kube.TransportOptions{}), objs.Job, client.Options{Output: out, ExitShim: true})
}

// concurrentScript is job i's script and the exact output it must give;
// with hold the script sleeps that long before its last output.
func concurrentScript(i int, hold time.Duration) ([]byte, []byte) {
	tag := "job" + strconv.Itoa(i)
	sleep := ""
	if hold > 0 {
		sleep = fmt.Sprintf("sleep %d\n", int(hold.Seconds()))
	}
	script := "#!/bin/sh\nn=0\nwhile [ $n -lt 200 ]; do echo \"" + tag + " line $n\"; n=$((n+1)); done\n" + sleep + "printf 'end " + tag + "'\n"
	var want bytes.Buffer
	for n := range 200 {
		fmt.Fprintf(&want, "%s line %d\n", tag, n)
	}
	want.WriteString("end " + tag)
	return []byte(script), want.Bytes()
}

// fleetOptions are a kube-jobs or kube-bare process's settings, from its
// environment.
type fleetOptions struct {
	images nodeImages
	// heapProfile, if set, is where the heap profile at the peak of
	// RssAnon is written (BENCH_HEAPPROFILE).
	heapProfile string
	// hold makes each job's script sleep that long before its last
	// output (kube-jobs-held).
	hold time.Duration
}

// kubeJobsReport is what `harness kube-jobs` prints.
type kubeJobsReport struct {
	Jobs   int      `json:"jobs"`
	Exact  int      `json:"exact"`
	WallMS int64    `json:"wall_ms"`
	JobMS  []int64  `json:"job_ms"`
	Errors []string `json:"errors,omitempty"`
	// Requests counts the process's API requests by verb and resource.
	Requests map[string]int `json:"requests"`
	// PeakRSS is the process's VmHWM in bytes at the end (wait4's maxrss
	// would also count the parent's RSS at fork, kept across exec).
	PeakRSS int64 `json:"peak_rss"`
	// Peak is the process's memory at its largest sampled RssAnon.
	Peak memPeak `json:"peak"`
}

// kubeJobs runs n jobs at once from this process and prints a JSON
// kubeJobsReport on w.
func kubeJobs(ctx context.Context, kubeconfig string, opts fleetOptions, n int, w io.Writer) error {
	k, err := newKubeEnv(kubeconfig, opts.images)
	if err != nil {
		return err
	}
	return runFleetJobs(k, n, opts, w, func(i int) error {
		script, want := concurrentScript(i, opts.hold)
		var out bytes.Buffer
		res, err := k.runJob(ctx, "concurrent.sh", script, &out, nil)
		switch {
		case err != nil:
			return fmt.Errorf("job %d: %w", i, err)
		case res.ExitCode != 0:
			return fmt.Errorf("job %d: exit code %d", i, res.ExitCode)
		case !bytes.Equal(out.Bytes(), want):
			return fmt.Errorf("job %d: output differs (%d bytes, want %d)", i, out.Len(), len(want))
		}
		return nil
	})
}

// runFleetJobs runs job(0..n-1) at once, times each, and prints the
// kubeJobsReport on w: how many were exact (job returned nil), the
// errors, the process's API requests and its peak memory.
func runFleetJobs(k *kubeEnv, n int, opts fleetOptions, w io.Writer, job func(i int) error) error {
	rep := kubeJobsReport{Jobs: n, JobMS: make([]int64, n)}
	// A runner starts its namespace's shared watches before it creates
	// its first pods, so their events need no list per pod.
	wctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := k.watcher.Watch(wctx, k.ns); err != nil {
		return err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	stopSampling := make(chan struct{})
	peak := anonPeak(stopSampling, opts.heapProfile)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			err := job(i)
			d := time.Since(t0)
			mu.Lock()
			defer mu.Unlock()
			rep.JobMS[i] = d.Milliseconds()
			if err != nil {
				rep.Errors = append(rep.Errors, err.Error())
			} else {
				rep.Exact++
			}
		}()
	}
	wg.Wait()
	rep.WallMS = time.Since(start).Milliseconds()
	rep.Requests = k.requests.counts()
	if _, hwm, err := memStatus(os.Getpid()); err == nil {
		rep.PeakRSS = hwm
	}
	close(stopSampling)
	rep.Peak = <-peak
	return json.NewEncoder(w).Encode(rep)
}

// fleetRun is one run of `harness kube-jobs` or `harness kube-bare`.
type fleetRun struct {
	rep    kubeJobsReport
	maxRSS int64         // the process's peak RSS in bytes (its VmHWM)
	anon   int64         // its peak anonymous RSS (sampled)
	server int64         // apiserver_request_total's growth during the run (every client of the node)
	per    durations     // each job's time
	wall   time.Duration // all jobs
}

// runFleet runs the harness as command (kube-jobs or kube-bare) with
// jobs jobs in a process of its own, so its peak RSS is its alone.
func runFleet(ctx context.Context, cfg *config, n *node, command string, jobs int) (*fleetRun, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	before, berr := n.requestTotal(ctx)
	cmd := exec.CommandContext(ctx, cfg.self, command, n.kubeconfig, strconv.Itoa(jobs))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %d: %w: %s", command, jobs, err, tailOf(stderr.Bytes(), 1000))
	}
	after, aerr := n.requestTotal(ctx)
	f := &fleetRun{server: -1}
	if berr == nil && aerr == nil {
		f.server = after - before
	}
	if err := json.Unmarshal(stdout.Bytes(), &f.rep); err != nil {
		return nil, fmt.Errorf("%s %d: read the report: %w", command, jobs, err)
	}
	f.maxRSS, f.anon = f.rep.PeakRSS, f.rep.Peak.Anon
	for _, m := range f.rep.JobMS {
		f.per = append(f.per, time.Duration(m)*time.Millisecond)
	}
	f.wall = time.Duration(f.rep.WallMS) * time.Millisecond
	return f, nil
}

// requestTotal sums the API server's apiserver_request_total counters.
func (n *node) requestTotal(ctx context.Context) (int64, error) {
	out, err := exec.CommandContext(ctx, n.kubectl, "--kubeconfig", n.kubeconfig, "get", "--raw", "/metrics").Output()
	if err != nil {
		return 0, fmt.Errorf("read the API server's metrics: %w", err)
	}
	var total float64
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		var v float64
		if _, err := fmt.Sscanf(line[strings.LastIndexByte(line, ' ')+1:], "%g", &v); err == nil {
			total += v
		}
	}
	return int64(total), nil
}

// concurrentJobs runs cfg.nodeJobs jobs at once from one process through
// client/kube and, right after, their floor: the same scripts in as many
// bare pods created and followed by one process.
func concurrentJobs(ctx context.Context, cfg *config, n *node, log *slog.Logger) (*section, error) {
	jobs := cfg.nodeJobs
	teth, err := runFleet(ctx, cfg, n, kubeJobsCommand, jobs)
	if err != nil {
		return nil, err
	}
	log.Info("concurrent jobs", "jobs", jobs, "exact", teth.rep.Exact, "wall", teth.wall, "max_rss", mib(teth.maxRSS))
	bare, err := runFleet(ctx, cfg, n, kubeBareCommand, jobs)
	if err != nil {
		return nil, err
	}
	log.Info("bare pods", "pods", jobs, "exact", bare.rep.Exact, "wall", bare.wall, "max_rss", mib(bare.maxRSS))
	held, err := runFleet(ctx, cfg, n, kubeHeldCommand, jobs)
	if err != nil {
		return nil, err
	}
	log.Info("held jobs", "jobs", jobs, "exact", held.rep.Exact, "wall", held.wall, "max_rss", mib(held.maxRSS))
	sec := &section{}
	t := &table{head: []string{fmt.Sprintf("%d jobs at once, one process", jobs), "tether (client/kube)", "floor: bare pods (create, watch, log)"}}
	t.add("outputs exact", fmt.Sprintf("%d of %d", teth.rep.Exact, teth.rep.Jobs), fmt.Sprintf("%d of %d", bare.rep.Exact, bare.rep.Jobs))
	t.add("wall time, all jobs", ms(teth.wall), ms(bare.wall))
	t.add("per job p50 / max", ms(teth.per.percentile(50))+" / "+ms(teth.per.max()), ms(bare.per.percentile(50))+" / "+ms(bare.per.max()))
	t.add("process peak RSS (VmHWM)", mib(teth.maxRSS), mib(bare.maxRSS))
	t.add("of which anonymous (heap, stacks; peak RssAnon sampled every 50 ms)", mib(teth.anon), mib(bare.anon))
	atPeak := func(p memPeak) string {
		return fmt.Sprintf("%d goroutines, Go heap in use %s, stacks %s", p.Goroutines, mib(int64(p.HeapInuse)), mib(int64(p.StackInuse)))
	}
	t.add("at that peak", atPeak(teth.rep.Peak), atPeak(bare.rep.Peak))
	tpj, tdetail := formatRequests(teth.rep.Requests, jobs)
	bpj, bdetail := formatRequests(bare.rep.Requests, jobs)
	t.add("API requests per job (this process's)", fmt.Sprintf("%.2f: %s", tpj, tdetail), fmt.Sprintf("%.2f: %s", bpj, bdetail))
	server := func(f *fleetRun) string {
		if f.server < 0 {
			return "unavailable"
		}
		return fmt.Sprintf("%.1f", float64(f.server)/float64(jobs))
	}
	t.add("apiserver_request_total growth per job (every client of the node: kubelet, other users)", server(teth), server(bare))
	sec.tabs = append(sec.tabs, t)
	ht := &table{head: []string{fmt.Sprintf("%d jobs attached at once (each script sleeps %s before its last output)", jobs, heldFor), "tether (client/kube)"}}
	ht.add("outputs exact", fmt.Sprintf("%d of %d", held.rep.Exact, held.rep.Jobs))
	ht.add("wall time, all jobs", ms(held.wall))
	ht.add("process peak RSS (VmHWM)", mib(held.maxRSS))
	ht.add("of which anonymous (peak RssAnon)", mib(held.anon))
	ht.add("at that peak", atPeak(held.rep.Peak))
	sec.tabs = append(sec.tabs, ht)
	for _, f := range []*fleetRun{teth, bare, held} {
		if len(f.rep.Errors) == 0 {
			continue
		}
		const show = 5
		var b strings.Builder
		fmt.Fprintf(&b, "**%d of %d failed**; the first errors:", len(f.rep.Errors), f.rep.Jobs)
		for _, e := range f.rep.Errors[:min(show, len(f.rep.Errors))] {
			b.WriteString("\n- " + tailOf([]byte(e), 400))
		}
		sec.notes = append(sec.notes, b.String())
	}
	ratio := float64(teth.wall) / float64(max(bare.wall, time.Millisecond))
	sec.goals = append(sec.goals,
		goal{
			measure:  fmt.Sprintf("%d concurrent jobs from one process vs the floor (bare pods, same run)", jobs),
			tether:   fmt.Sprintf("%.2f× (%s, %d/%d exact)", ratio, ms(teth.wall), teth.rep.Exact, teth.rep.Jobs),
			baseline: fmt.Sprintf("bare pods %s (%d/%d exact)", ms(bare.wall), bare.rep.Exact, bare.rep.Jobs),
			target:   "≤ 1.2× floor, all exact",
			verdict:  verdict(ratio <= 1.2 && teth.rep.Exact == jobs),
		},
		goal{
			measure:  fmt.Sprintf("client RSS for %d concurrent jobs", jobs),
			tether:   fmt.Sprintf("%s (anonymous %s; the rest is the executable's mapped pages)", mib(teth.maxRSS), mib(teth.anon)),
			baseline: fmt.Sprintf("bare-pod process %s (anonymous %s)", mib(bare.maxRSS), mib(bare.anon)),
			target:   "≤ 64 MiB",
			verdict:  verdict(teth.maxRSS <= 64<<20),
		},
		goal{
			measure:  fmt.Sprintf("client RSS for %d concurrent jobs, all attached at once (%s each)", jobs, heldFor),
			tether:   fmt.Sprintf("%s (anonymous %s), %d/%d exact", mib(held.maxRSS), mib(held.anon), held.rep.Exact, held.rep.Jobs),
			baseline: "—",
			target:   "≤ 64 MiB",
			verdict:  verdict(held.maxRSS <= 64<<20 && held.rep.Exact == jobs),
		},
		goal{
			measure:  "API requests per job (the client's own; watches shared)",
			tether:   fmt.Sprintf("%.2f", tpj),
			baseline: fmt.Sprintf("bare pods %.2f", bpj),
			target:   "reported",
			verdict:  "info",
		})
	return sec, nil
}

// kubeLatencyScript waits for the FIFO the harness makes in the pod's
// emptyDir volume and prints a dot for each line written to it. With
// hostname it first prints the pod's name on a line of its own (for a
// `tether run` process, whose pod the harness does not create).
func kubeLatencyScript(hostname bool) []byte {
	s := "#!/bin/sh\n"
	if hostname {
		s += "hostname\n"
	}
	return []byte(s + "while [ ! -p /tether/bench.fifo ]; do sleep 0.05; done\nexec 3</tether/bench.fifo\nwhile read -r _ <&3; do printf .; done\n")
}

// makeLatencyFIFO creates the latency script's FIFO in the emptyDir volume
// of the pod with uid, seen from the node's side of the filesystem, and
// opens it read-write (the open never blocks; closing it is the script's
// EOF).
func makeLatencyFIFO(cfg *config, uid string) (*os.File, error) {
	dir := filepath.Join(cfg.e2eDir, "kubelet", "pods", uid, "volumes", "kubernetes.io~empty-dir", "tether")
	fifo := filepath.Join(dir, "bench.fifo")
	if err := syscall.Mkfifo(fifo, 0o666); err != nil {
		return nil, fmt.Errorf("create the latency FIFO in the pod's emptyDir (%s): %w", dir, err)
	}
	if err := os.Chmod(fifo, 0o666); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open the latency FIFO: %w", err)
	}
	return f, nil
}

// kubeLatency samples partial-output latency through real attach in this
// process (client/kube and client.Run): the script in the pod waits on a
// FIFO the harness makes in the pod's emptyDir volume.
func kubeLatency(ctx context.Context, cfg *config, n *node, samples int) (durations, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	k, err := newKubeEnv(n.kubeconfig, n.images)
	if err != nil {
		return nil, err
	}
	sink := newStampSink()
	fifoCh := make(chan *os.File, 1)
	done := make(chan error, 1)
	go func() {
		res, err := k.runJob(ctx, "latency.sh", kubeLatencyScript(false), sink, func(pod *kube.Pod) error {
			f, err := makeLatencyFIFO(cfg, string(pod.UID()))
			if err == nil {
				fifoCh <- f
			}
			return err
		})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("exit code %d", res.ExitCode)
		}
		done <- err
	}()
	return sampleFIFO(fifoCh, sink, done, "tether through attach", samples)
}

// kubeCLILatency samples partial-output latency as a user sees it: a
// whole `tether run --image … SCRIPT` process against the node, its stdout
// a pipe to this process. The script prints its pod's name first; the
// harness makes the FIFO in that pod's emptyDir.
func kubeCLILatency(ctx context.Context, cfg *config, n *node, ws *workspace, samples int) (durations, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	k, err := newKubeEnv(n.kubeconfig, n.images)
	if err != nil {
		return nil, err
	}
	script, err := ws.script("latency-node.sh", string(kubeLatencyScript(true)))
	if err != nil {
		return nil, err
	}
	sink := newStampSink()
	out := &firstLine{line: make(chan string, 1), rest: sink}
	cmd := exec.CommandContext(ctx, cfg.tether, "run", "--image", n.images.build, "--helper-image", n.images.helper,
		"--kubeconfig", n.kubeconfig, "--quiet", script)
	cmd.Stdout = out
	var stderr strings.Builder
	cmd.Stderr = &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start tether run: %w", err)
	}
	go func() {
		err := cmd.Wait()
		if err != nil {
			err = fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), err, tailOf([]byte(stderr.String()), 600))
		}
		done <- err
	}()
	fifoCh := make(chan *os.File, 1)
	select {
	case name := <-out.line:
		pod, err := k.cs.CoreV1().Pods(k.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			_ = cmd.Process.Kill()
			<-done
			return nil, fmt.Errorf("find the pod of tether run (%q, printed by its script): %w", name, err)
		}
		f, err := makeLatencyFIFO(cfg, string(pod.UID))
		if err != nil {
			_ = cmd.Process.Kill()
			<-done
			return nil, err
		}
		fifoCh <- f
	case err := <-done:
		return nil, fmt.Errorf("tether run ended before its script printed its pod's name: %w", err)
	}
	return sampleFIFO(fifoCh, sink, done, "tether run through attach", samples)
}

// sampleFIFO waits for the FIFO (or the job's end), takes the samples and
// waits for the job to end once the FIFO is closed.
func sampleFIFO(fifoCh <-chan *os.File, sink *stampSink, done <-chan error, label string, samples int) (durations, error) {
	var w *os.File
	select {
	case w = <-fifoCh:
	case err := <-done:
		return nil, fmt.Errorf("latency job %s: %w", label, err)
	}
	defer w.Close()
	d, err := measureDots(w, sink, done, label, samples, shortPause)
	if err != nil {
		return nil, err
	}
	w.Close()
	if err := <-done; err != nil {
		return nil, fmt.Errorf("latency job %s: %w", label, err)
	}
	return d, nil
}

// firstLine sends the first line written to it (without its newline) on
// line and passes the rest on to rest.
type firstLine struct {
	line chan string
	rest io.Writer
	buf  []byte
	sent bool
}

func (f *firstLine) Write(p []byte) (int, error) {
	if f.sent {
		return f.rest.Write(p)
	}
	f.buf = append(f.buf, p...)
	i := bytes.IndexByte(f.buf, '\n')
	if i < 0 {
		return len(p), nil
	}
	f.line <- strings.TrimSpace(string(f.buf[:i]))
	f.sent = true
	if rest := f.buf[i+1:]; len(rest) > 0 {
		if _, err := f.rest.Write(rest); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}
