package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// nodeImage is the build image of the node measurements (built by `make
// images`, imported by scripts/e2e-cluster-up.sh).
const nodeImage = "localhost/tether/busybox:dev"

// node is the e2e node the measurements run against.
type node struct {
	kubeconfig, kubectl string
}

// findNode returns the running e2e node, or why there is none.
func findNode(ctx context.Context, cfg *config, getenv func(string) string) (*node, string) {
	kubeconfig := filepath.Join(cfg.e2eDir, "kubeconfig")
	if _, err := os.Stat(kubeconfig); err != nil {
		return nil, "no kubeconfig at " + kubeconfig + " (start one with scripts/e2e-cluster-up.sh)"
	}
	cache := getenv("TETHER_CACHE")
	if cache == "" {
		base := getenv("XDG_CACHE_HOME")
		if base == "" {
			base = filepath.Join(getenv("HOME"), ".cache")
		}
		cache = filepath.Join(base, "tether")
	}
	version := getenv("KUBE_VERSION")
	if version == "" {
		version = "v1.34.4"
	}
	kubectl := filepath.Join(cache, "kube", version, "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		return nil, "no kubectl at " + kubectl
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "get", "--raw", "/readyz").CombinedOutput(); err != nil {
		return nil, fmt.Sprintf("the node's API server is not ready: %v: %s", err, bytes.TrimSpace(out))
	}
	return &node{kubeconfig: kubeconfig, kubectl: kubectl}, ""
}

// timedOutput runs cmd and returns its stdout and how long it took.
func timedOutput(cmd *exec.Cmd) ([]byte, time.Duration, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return stdout.Bytes(), d, fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), err, tailOf(stderr.Bytes(), 600))
	}
	return stdout.Bytes(), d, nil
}

func tailOf(b []byte, n int) string {
	b = bytes.TrimSpace(b)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func randomName(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

func nodeSection(ctx context.Context, cfg *config, ws *workspace, log *slog.Logger) (*section, error) {
	sec := &section{title: "Real node (scripts/e2e-cluster-up.sh)"}
	n, why := findNode(ctx, cfg, os.Getenv)
	if n == nil {
		skip := "skipped: no node"
		sec.notes = append(sec.notes, "**Skipped: no node** — "+why+". These rows are not CI-gated; run `scripts/e2e-cluster-up.sh` (and `make images`) first to measure them.")
		sec.goals = append(sec.goals,
			goal{measure: "e2e echo job vs `kubectl run --rm -i`", tether: "—", baseline: "—", target: "≤ 1.1×", verdict: skip},
			goal{measure: "100 concurrent jobs, one process", tether: "—", baseline: "—", target: "all outputs exact; RSS reported", verdict: skip},
			goal{measure: "partial-output latency through real attach", tether: "—", baseline: "—", target: "p99 ≤ 100 ms", verdict: skip},
		)
		return sec, nil
	}
	log.Info("node found", "kubeconfig", n.kubeconfig)
	echo, err := ws.script("echo.sh", "#!/bin/sh\necho hello\n")
	if err != nil {
		return nil, err
	}
	const want = "hello\n"
	var tetherRuns, kubectlRuns durations
	for r := range cfg.repeat {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		out, d, err := timedOutput(exec.CommandContext(rctx, cfg.tether, "run", "--image", nodeImage, "--kubeconfig", n.kubeconfig, "--quiet", echo))
		cancel()
		if err != nil {
			return nil, fmt.Errorf("tether echo job: %w", err)
		}
		if string(out) != want {
			return nil, fmt.Errorf("tether echo job printed %q, want %q", out, want)
		}
		tetherRuns = append(tetherRuns, d)

		rctx, cancel = context.WithTimeout(ctx, 5*time.Minute)
		out, d, err = timedOutput(exec.CommandContext(rctx, n.kubectl, "--kubeconfig", n.kubeconfig, "run", randomName("bench-echo-"),
			"--rm", "-i", "--quiet", "--restart=Never", "--image", nodeImage, "--image-pull-policy=Never", "--", "sh", "-c", "echo hello"))
		cancel()
		if err != nil {
			return nil, fmt.Errorf("kubectl echo pod: %w", err)
		}
		if !strings.Contains(string(out), "hello") {
			return nil, fmt.Errorf("kubectl echo pod printed %q, want hello", out)
		}
		kubectlRuns = append(kubectlRuns, d)
		log.Info("node echo", "round", r+1, "tether", tetherRuns[r].Round(time.Millisecond), "kubectl", kubectlRuns[r].Round(time.Millisecond))
	}
	ratio := float64(tetherRuns.median()) / float64(kubectlRuns.median())
	t := &table{head: []string{"echo job on the node", "median", "range"}}
	t.add("`tether run --image "+nodeImage+" echo.sh`", ms(tetherRuns.median()), ms(tetherRuns.min())+"–"+ms(tetherRuns.max()))
	t.add("`kubectl run --rm -i --restart=Never --image "+nodeImage+" --image-pull-policy=Never -- sh -c 'echo hello'`", ms(kubectlRuns.median()), ms(kubectlRuns.min())+"–"+ms(kubectlRuns.max()))
	sec.tabs = append(sec.tabs, t)
	sec.notes = append(sec.notes, fmt.Sprintf("Echo job: both are whole CLI invocations (process start, pod create, wait, attach, output, delete), %d rounds interleaved; median. "+
		"Latency: as in the local measurement, with the FIFO made in the pod's emptyDir from the node's side (%d samples). "+
		"Concurrency: `harness kube-jobs` in its own process runs 100 jobs at once through client/kube, each printing 200 numbered lines and a partial last line, compared byte for byte.", cfg.repeat, cfg.latency))
	sec.goals = append(sec.goals, goal{
		measure:  "e2e echo job vs `kubectl run --rm -i`",
		tether:   fmt.Sprintf("%.2f× (%s)", ratio, ms(tetherRuns.median())),
		baseline: "kubectl " + ms(kubectlRuns.median()),
		target:   "≤ 1.1×",
		verdict:  verdict(ratio <= 1.1),
	})
	lat, err := kubeLatency(ctx, cfg, n, cfg.latency)
	if err != nil {
		return nil, err
	}
	lt := &table{head: []string{"partial-output latency through attach", "samples", "p50", "p90", "p99", "max"}}
	lt.add("tether (client/kube, WebSocket attach)", fmt.Sprint(len(lat)), ms(lat.percentile(50)), ms(lat.percentile(90)), ms(lat.percentile(99)), ms(lat.max()))
	sec.tabs = append(sec.tabs, lt)
	sec.goals = append(sec.goals, goal{
		measure:  "partial-output latency through real attach",
		tether:   fmt.Sprintf("p50 %s, p99 %s", ms(lat.percentile(50)), ms(lat.percentile(99))),
		baseline: "—",
		target:   "p99 ≤ 100 ms",
		verdict:  verdict(lat.percentile(99) <= 100*time.Millisecond),
	})
	conc, err := concurrentJobs(ctx, cfg, n, log)
	if err != nil {
		return nil, err
	}
	sec.goals = append(sec.goals, conc.goals...)
	sec.tabs = append(sec.tabs, conc.tabs...)
	sec.notes = append(sec.notes, conc.notes...)
	return sec, nil
}
