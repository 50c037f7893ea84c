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
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
)

// kubeJobsCommand is the harness's argument that makes it the
// one-process, many-jobs client (its memory is measured on its own).
const kubeJobsCommand = "kube-jobs"

// kubeEnv reaches the node through client/kube.
type kubeEnv struct {
	cfg *rest.Config
	cs  kubernetes.Interface
	ns  string
}

func newKubeEnv(kubeconfig string) (*kubeEnv, error) {
	// client-go's klog reports a WebSocket the session closed on purpose
	// as an error; the session reports real trouble itself.
	klog.SetSlogLogger(slog.New(slog.DiscardHandler))
	cfg, ns, err := kube.LoadConfig(kube.ConfigOptions{Kubeconfig: kubeconfig})
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 200, 400 // 100 jobs at once
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("build the Kubernetes client: %w", err)
	}
	return &kubeEnv{cfg: cfg, cs: cs, ns: ns}, nil
}

// runJob runs one job in a pod of nodeImage and deletes the pod. running,
// if set, is called once the pod runs, before the session starts.
func (k *kubeEnv) runJob(ctx context.Context, name string, script []byte, out io.Writer, running func(*kube.Pod) error) (client.Result, error) {
	objs, err := kube.Build(kube.Spec{
		Namespace:  k.ns,
		Image:      nodeImage,
		PullPolicy: corev1.PullNever, // no registry: images are imported
		Scripts:    []kube.Script{{Name: name, Content: script}},
		Timeout:    10 * time.Minute,
	})
	if err != nil {
		return client.Result{}, err
	}
	pod, err := kube.Create(ctx, k.cs, objs, nil)
	if err != nil {
		return client.Result{}, err
	}
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

// concurrentScript is job i's script and the exact output it must give.
func concurrentScript(i int) ([]byte, []byte) {
	tag := "job" + strconv.Itoa(i)
	script := "#!/bin/sh\nn=0\nwhile [ $n -lt 200 ]; do echo \"" + tag + " line $n\"; n=$((n+1)); done\nprintf 'end " + tag + "'\n"
	var want bytes.Buffer
	for n := range 200 {
		fmt.Fprintf(&want, "%s line %d\n", tag, n)
	}
	want.WriteString("end " + tag)
	return []byte(script), want.Bytes()
}

// kubeJobsReport is what `harness kube-jobs` prints.
type kubeJobsReport struct {
	Jobs   int      `json:"jobs"`
	Exact  int      `json:"exact"`
	WallMS int64    `json:"wall_ms"`
	JobMS  []int64  `json:"job_ms"`
	Errors []string `json:"errors,omitempty"`
}

// kubeJobs runs n jobs at once from this process and prints a JSON
// kubeJobsReport on w.
func kubeJobs(ctx context.Context, kubeconfig string, n int, w io.Writer) error {
	k, err := newKubeEnv(kubeconfig)
	if err != nil {
		return err
	}
	rep := kubeJobsReport{Jobs: n, JobMS: make([]int64, n)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			script, want := concurrentScript(i)
			var out bytes.Buffer
			t0 := time.Now()
			res, err := k.runJob(ctx, "concurrent.sh", script, &out, nil)
			d := time.Since(t0)
			mu.Lock()
			defer mu.Unlock()
			rep.JobMS[i] = d.Milliseconds()
			switch {
			case err != nil:
				rep.Errors = append(rep.Errors, fmt.Sprintf("job %d: %v", i, err))
			case res.ExitCode != 0:
				rep.Errors = append(rep.Errors, fmt.Sprintf("job %d: exit code %d", i, res.ExitCode))
			case !bytes.Equal(out.Bytes(), want):
				rep.Errors = append(rep.Errors, fmt.Sprintf("job %d: output differs (%d bytes, want %d)", i, out.Len(), len(want)))
			default:
				rep.Exact++
			}
		}()
	}
	wg.Wait()
	rep.WallMS = time.Since(start).Milliseconds()
	return json.NewEncoder(w).Encode(rep)
}

// concurrentJobs runs `harness kube-jobs` as its own process (so its peak
// RSS is the client's alone) with cfg.nodeJobs jobs.
func concurrentJobs(ctx context.Context, cfg *config, n *node, log *slog.Logger) (*section, error) {
	jobs := cfg.nodeJobs
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, cfg.self, kubeJobsCommand, n.kubeconfig, strconv.Itoa(jobs))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%d concurrent jobs: %w: %s", jobs, err, tailOf(stderr.Bytes(), 1000))
	}
	var rep kubeJobsReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return nil, fmt.Errorf("%d concurrent jobs: read the report: %w", jobs, err)
	}
	var maxRSS int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		maxRSS = ru.Maxrss << 10 // KiB
	}
	var per durations
	for _, m := range rep.JobMS {
		per = append(per, time.Duration(m)*time.Millisecond)
	}
	log.Info("concurrent jobs", "jobs", jobs, "exact", rep.Exact, "wall", time.Duration(rep.WallMS)*time.Millisecond, "max_rss", mib(maxRSS))
	sec := &section{}
	t := &table{head: []string{fmt.Sprintf("%d concurrent jobs, one process (client/kube)", jobs), "value"}}
	t.add("outputs exact", fmt.Sprintf("%d of %d", rep.Exact, rep.Jobs))
	t.add("wall time, all jobs", ms(time.Duration(rep.WallMS)*time.Millisecond))
	t.add("per job p50 / max", ms(per.percentile(50))+" / "+ms(per.max()))
	t.add("client process peak RSS", mib(maxRSS))
	sec.tabs = append(sec.tabs, t)
	if len(rep.Errors) > 0 {
		const show = 5
		var b strings.Builder
		fmt.Fprintf(&b, "**%d of %d concurrent jobs failed**; the first errors:", len(rep.Errors), rep.Jobs)
		for _, e := range rep.Errors[:min(show, len(rep.Errors))] {
			b.WriteString("\n- " + tailOf([]byte(e), 400))
		}
		sec.notes = append(sec.notes, b.String())
	}
	sec.goals = append(sec.goals, goal{
		measure:  fmt.Sprintf("%d concurrent jobs, one process", jobs),
		tether:   fmt.Sprintf("%d/%d exact, %s, peak RSS %s", rep.Exact, rep.Jobs, ms(time.Duration(rep.WallMS)*time.Millisecond), mib(maxRSS)),
		baseline: "—",
		target:   "all outputs exact; RSS reported",
		verdict:  verdict(rep.Exact == rep.Jobs),
	})
	return sec, nil
}

// kubeLatency samples partial-output latency through real attach: the
// script in the pod waits on a FIFO the harness makes in the pod's
// emptyDir volume, seen from the node's side of the filesystem.
func kubeLatency(ctx context.Context, cfg *config, n *node, samples int) (durations, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	k, err := newKubeEnv(n.kubeconfig)
	if err != nil {
		return nil, err
	}
	script := []byte("#!/bin/sh\nwhile [ ! -p /tether/bench.fifo ]; do sleep 0.05; done\nexec 3</tether/bench.fifo\nwhile read -r _ <&3; do printf .; done\n")
	sink := newStampSink()
	fifoCh := make(chan *os.File, 1)
	done := make(chan error, 1)
	go func() {
		res, err := k.runJob(ctx, "latency.sh", script, sink, func(pod *kube.Pod) error {
			dir := filepath.Join(cfg.e2eDir, "kubelet", "pods", string(pod.UID), "volumes", "kubernetes.io~empty-dir", "tether")
			fifo := filepath.Join(dir, "bench.fifo")
			if err := syscall.Mkfifo(fifo, 0o666); err != nil {
				return fmt.Errorf("create the latency FIFO in the pod's emptyDir (%s): %w", dir, err)
			}
			if err := os.Chmod(fifo, 0o666); err != nil {
				return err
			}
			f, err := os.OpenFile(fifo, os.O_RDWR, 0)
			if err != nil {
				return fmt.Errorf("open the latency FIFO: %w", err)
			}
			fifoCh <- f
			return nil
		})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("exit code %d", res.ExitCode)
		}
		done <- err
	}()
	var w *os.File
	select {
	case w = <-fifoCh:
	case err := <-done:
		return nil, fmt.Errorf("latency job through attach: %w", err)
	}
	defer w.Close()
	d, err := measureDots(w, sink, done, "tether through attach", samples, shortPause)
	if err != nil {
		return nil, err
	}
	w.Close()
	if err := <-done; err != nil {
		return nil, fmt.Errorf("latency job through attach: %w", err)
	}
	return d, nil
}
