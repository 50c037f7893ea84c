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

	"github.com/tether-ci/tether/internal/contract"
)

// nodeImages are the images of the node measurements (built by
// scripts/build-images.sh, imported by scripts/e2e-cluster-up.sh): the
// build image jobs and bare pods run in, the image with bash (the
// runner's script steps run with bash), and the image carrying tether-shim.
type nodeImages struct {
	build, bash, helper string
}

// imagesTagged returns the node images of the tag in TETHER_IMAGE_TAG (as
// scripts/build-images.sh and the e2e tests read it), default the
// development tag.
func imagesTagged(getenv func(string) string) nodeImages {
	tag := getenv("TETHER_IMAGE_TAG")
	if tag == "" {
		tag = contract.DevImageTag
	}
	return nodeImages{build: "localhost/tether/busybox:" + tag, bash: "localhost/tether/bash:" + tag, helper: contract.ShimImageRepository + ":" + tag}
}

// node is the e2e node the measurements run against.
type node struct {
	kubeconfig, kubectl string
	images              nodeImages
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
	return &node{kubeconfig: kubeconfig, kubectl: kubectl, images: imagesTagged(getenv)}, ""
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
	echoGoal := "e2e echo job vs `kubectl run --rm -i`"
	latGoal := "partial-output latency through real attach"
	concGoal := fmt.Sprintf("%d concurrent jobs, one process", cfg.nodeJobs)
	n, why := findNode(ctx, cfg, os.Getenv)
	if n == nil {
		skip := "skipped: no node"
		sec.notes = append(sec.notes, "**Skipped: no node** — "+why+". These rows are not CI-gated; run `scripts/e2e-cluster-up.sh` (and `make images`) first to measure them.")
		sec.goals = append(sec.goals,
			goal{measure: echoGoal, tether: "—", baseline: "—", target: "≤ 1.1×", verdict: skip},
			goal{measure: latGoal, tether: "—", baseline: "—", target: "p99 ≤ 10 ms", verdict: skip},
			goal{measure: concGoal, tether: "—", baseline: "—", target: "≤ 1.2× floor; RSS ≤ 64 MiB", verdict: skip},
		)
		return sec, nil
	}
	log.Info("node found", "kubeconfig", n.kubeconfig)
	sec.notes = append(sec.notes, fmt.Sprintf("Echo job: both are whole CLI invocations (process start, pod create, wait, attach, output, delete), %d rounds interleaved; median. "+
		"Latency: as in the local measurement, with the FIFO made in the pod's emptyDir from the node's side (%d samples): through a whole `tether run` process whose stdout is a pipe to the harness (its script first prints its pod's name, so the harness finds the pod), and in this process through client/kube. "+
		"Concurrency: `harness kube-jobs` in its own process runs %d jobs at once through client/kube, each printing 200 numbered lines and a partial last line, compared byte for byte; "+
		"then `harness kube-bare`, its floor, runs the same scripts as `sh -c` in as many bare pods of the same image, created by one process, followed by one shared watch to their end, their logs read and compared, deleted. "+
		"Then `harness kube-jobs-held` runs the same jobs with a sleep before each script's last output, so that every job is attached at once, as a runner's jobs are for most of their life. "+
		"API requests are counted in each process's HTTP transport. "+
		"A measurement that fails is reported as FAILED with its error; the others still run.", cfg.repeat, cfg.latency, cfg.nodeJobs))
	// failed records a measurement that could not be made.
	failed := func(measure, target string, err error) {
		log.Error("node measurement failed", "measure", measure, "err", err)
		sec.notes = append(sec.notes, "**"+measure+" FAILED:** "+tailOf([]byte(err.Error()), 800))
		sec.goals = append(sec.goals, goal{measure: measure, tether: "—", baseline: "—", target: target, verdict: "FAILED (see below)"})
	}

	if err := echoJobs(ctx, cfg, n, ws, sec, log); err != nil {
		failed(echoGoal, "≤ 1.1×", err)
	}
	if err := bulkJobs(ctx, cfg, n, ws, sec, log); err != nil {
		failed("bulk output through real attach", "exact", err)
	}
	if err := initContainerCost(ctx, cfg, n, sec, log); err != nil {
		failed("the shim's init container in a job pod's start", "info", err)
	}
	lt := &table{head: []string{"partial-output latency through attach", "samples", "p50", "p90", "p99", "max"}}
	latRow := func(label string, lat durations) {
		lt.add(label, fmt.Sprint(len(lat)), ms(lat.percentile(50)), ms(lat.percentile(90)), ms(lat.percentile(99)), ms(lat.max()))
	}
	// The verdict is the CLI's, as a user runs it; the in-process row
	// (client/kube and client.Run in this process) is informational.
	if lat, err := kubeCLILatency(ctx, cfg, n, ws, cfg.latency); err != nil {
		failed(latGoal, "p99 ≤ 10 ms", err)
	} else {
		latRow("`tether run --image … SCRIPT` (stdout a pipe)", lat)
		sec.goals = append(sec.goals, goal{
			measure:  latGoal + " via the CLI (`printf .` → tether's stdout)",
			tether:   fmt.Sprintf("p50 %s, p99 %s", ms(lat.percentile(50)), ms(lat.percentile(99))),
			baseline: "—",
			target:   "p99 ≤ 10 ms",
			verdict:  verdict(lat.percentile(99) <= 10*time.Millisecond),
		})
	}
	if lat, err := kubeLatency(ctx, cfg, n, cfg.latency); err != nil {
		failed(latGoal+" in-process", "info", err)
	} else {
		latRow("in-process (client/kube attach, client.Run → writer)", lat)
		sec.goals = append(sec.goals, goal{
			measure:  latGoal + " in-process (`printf .` → writer)",
			tether:   fmt.Sprintf("p50 %s, p99 %s", ms(lat.percentile(50)), ms(lat.percentile(99))),
			baseline: "—",
			target:   "info (the CLI row decides)",
			verdict:  "info",
		})
	}
	if len(lt.rows) > 0 {
		sec.tabs = append(sec.tabs, lt)
	}
	if conc, err := concurrentJobs(ctx, cfg, n, log); err != nil {
		failed(concGoal, "≤ 1.2× floor; RSS ≤ 64 MiB", err)
	} else {
		sec.goals = append(sec.goals, conc.goals...)
		sec.tabs = append(sec.tabs, conc.tabs...)
		sec.notes = append(sec.notes, conc.notes...)
	}
	return sec, nil
}

// echoJobs times an echo job through `tether run --image` against `kubectl
// run --rm -i`, interleaved, and adds the results to sec.
func echoJobs(ctx context.Context, cfg *config, n *node, ws *workspace, sec *section, log *slog.Logger) error {
	echo, err := ws.script("echo.sh", "#!/bin/sh\necho hello\n")
	if err != nil {
		return err
	}
	const want = "hello\n"
	var tetherRuns, kubectlRuns, floorRuns durations
	lost := 0
	for r := range cfg.repeat {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		out, d, err := timedOutput(exec.CommandContext(rctx, cfg.tether, "run", "--image", n.images.build, "--helper-image", n.images.helper, "--kubeconfig", n.kubeconfig, "--quiet", echo))
		cancel()
		if err != nil {
			return fmt.Errorf("tether echo job: %w", err)
		}
		if string(out) != want {
			return fmt.Errorf("tether echo job printed %q, want %q", out, want)
		}
		tetherRuns = append(tetherRuns, d)

		rctx, cancel = context.WithTimeout(ctx, 5*time.Minute)
		out, d, err = timedOutput(exec.CommandContext(rctx, n.kubectl, "--kubeconfig", n.kubeconfig, "run", randomName("bench-echo-"),
			"--rm", "-i", "--quiet", "--restart=Never", "--image", n.images.build, "--image-pull-policy=Never", "--", "sh", "-c", "echo hello"))
		cancel()
		if err != nil {
			return fmt.Errorf("kubectl echo pod: %w", err)
		}
		if !strings.Contains(string(out), "hello") {
			// kubectl attaches after the container started: a short job's
			// output can be gone by then (the race Tether exists to fix).
			lost++
		}
		kubectlRuns = append(kubectlRuns, d)

		// The floor: a bare pod whose output cannot be missed, because
		// it waits for a line on stdin (as tether-shim waits for its
		// job) that kubectl sends once attached.
		rctx, cancel = context.WithTimeout(ctx, 5*time.Minute)
		c := exec.CommandContext(rctx, n.kubectl, "--kubeconfig", n.kubeconfig, "run", randomName("bench-floor-"),
			"--rm", "-i", "--quiet", "--restart=Never", "--image", n.images.build, "--image-pull-policy=Never", "--", "sh", "-c", floorEcho)
		c.Stdin = strings.NewReader("go\n")
		out, d, err = timedOutput(c)
		cancel()
		if err != nil {
			return fmt.Errorf("kubectl floor pod: %w", err)
		}
		if !strings.Contains(string(out), "hello") {
			return fmt.Errorf("kubectl floor pod printed %q, want hello", out)
		}
		floorRuns = append(floorRuns, d)
		log.Info("node echo", "round", r+1, "tether", tetherRuns[r].Round(time.Millisecond), "kubectl", kubectlRuns[r].Round(time.Millisecond), "floor", d.Round(time.Millisecond))
	}
	floorRatio := float64(tetherRuns.median()) / float64(floorRuns.median())
	ratio := float64(tetherRuns.median()) / float64(kubectlRuns.median())
	t := &table{head: []string{"echo job on the node", "median", "range"}}
	t.add("`tether run --image "+n.images.build+" echo.sh`", ms(tetherRuns.median()), ms(tetherRuns.min())+"–"+ms(tetherRuns.max()))
	t.add("`kubectl run --rm -i --restart=Never --image "+n.images.build+" --image-pull-policy=Never -- sh -c 'echo hello'`", ms(kubectlRuns.median()), ms(kubectlRuns.min())+"–"+ms(kubectlRuns.max()))
	t.add("floor: `kubectl run --rm -i … -- sh -c '"+floorEcho+"'` fed a line on stdin (a bare pod whose output is seen through attach)", ms(floorRuns.median()), ms(floorRuns.min())+"–"+ms(floorRuns.max()))
	sec.tabs = append(sec.tabs, t)
	sec.notes = append(sec.notes, fmt.Sprintf("Tether printed exactly `hello` every time; `kubectl run --rm -i` lost the output in %d of %d runs (it attaches after the container started, and a short job can be done by then).", lost, cfg.repeat))
	sec.goals = append(sec.goals, goal{
		measure:  "e2e echo job vs `kubectl run --rm -i`",
		tether:   fmt.Sprintf("%.2f× (%s)", ratio, ms(tetherRuns.median())),
		baseline: fmt.Sprintf("kubectl %s (output lost in %d/%d)", ms(kubectlRuns.median()), lost, cfg.repeat),
		target:   "≤ 1.1×",
		verdict:  verdict(ratio <= 1.1),
	}, goal{
		measure:  "echo job vs a bare pod's floor (create → output seen through attach)",
		tether:   fmt.Sprintf("%.2f× (%s)", floorRatio, ms(tetherRuns.median())),
		baseline: fmt.Sprintf("bare pod %s", ms(floorRuns.median())),
		target:   "≤ 1.2× floor",
		verdict:  verdict(floorRatio <= 1.2),
	})
	return nil
}

// floorEcho is the floor pod's command: it prints once a line arrives on
// stdin, so the attached kubectl cannot miss the output.
const floorEcho = "read _; echo hello"
