package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/contract"
)

// poolRounds is the least number of warm and cold rounds of the pool
// section (BENCH_REPEAT raises it).
const poolRounds = 5

// warmSettle is how long a round's warm pod has been ready when its job
// starts (a pool's pods wait for their jobs; the node is done starting
// them).
const warmSettle = time.Second

// poolSection times an echo job through `tether run --pool` on a warm pod
// against the same job on a cold pod, interleaved: the first output after
// the command started, and the whole command.
func poolSection(ctx context.Context, cfg *config, ws *workspace, log *slog.Logger) (*section, error) {
	sec := &section{title: "Warm pods (`tether run --pool`) on the real node"}
	firstGoal := "`tether run --pool` echo job: first output after the command starts"
	wholeGoal := "`tether run --pool` echo job: whole command"
	n, why := findNode(ctx, cfg, os.Getenv)
	if n == nil {
		sec.notes = append(sec.notes, "**Skipped: no node** — "+why+".")
		for _, g := range []string{firstGoal, wholeGoal} {
			sec.goals = append(sec.goals, goal{measure: g, tether: "—", baseline: "—", target: "—", verdict: "skipped: no node"})
		}
		return sec, nil
	}
	rounds := max(cfg.repeat, poolRounds)
	warm, cold, unfaulted, err := poolEcho(ctx, cfg, n, ws, rounds, log)
	var steps *table
	var stepsNote string
	if err == nil {
		steps, stepsNote, err = poolBreakdown(ctx, cfg, warm)
	}
	if err != nil {
		log.Error("pool measurement failed", "err", err)
		sec.notes = append(sec.notes, "**Warm pods FAILED:** "+tailOf([]byte(err.Error()), 800))
		for _, g := range []string{firstGoal, wholeGoal} {
			sec.goals = append(sec.goals, goal{measure: g, tether: "—", baseline: "—", target: "—", verdict: "FAILED (see below)"})
		}
		return sec, nil
	}
	sec.notes = append(sec.notes, fmt.Sprintf("Each round first makes one warm pod of a pool with the job's settings (client/kube's WarmPod, as `tether pool serve` does; not timed; the job starts %s after the pod is ready), "+
		"then runs `tether run --pool POOL --image … echo.sh` (it claims the warm pod) and the same command without `--pool` (a cold pod), "+
		"each a whole CLI process; first output is from the process's start to the first byte on its stdout. %d rounds interleaved; median.", warmSettle, rounds))
	t := &table{head: []string{"echo job on the node", "first output (median)", "range", "whole command (median)", "range"}}
	t.add("warm: `tether run --pool …`", ms(warm.first.median()), ms(warm.first.min())+"–"+ms(warm.first.max()), ms(warm.whole.median()), ms(warm.whole.min())+"–"+ms(warm.whole.max()))
	t.add("warm, the heap's pages faulted in one by one (`"+contract.HeapPrefaultVar+"=0`)", ms(unfaulted.first.median()), ms(unfaulted.first.min())+"–"+ms(unfaulted.first.max()), ms(unfaulted.whole.median()), ms(unfaulted.whole.min())+"–"+ms(unfaulted.whole.max()))
	t.add("cold: `tether run …`", ms(cold.first.median()), ms(cold.first.min())+"–"+ms(cold.first.max()), ms(cold.whole.median()), ms(cold.whole.min())+"–"+ms(cold.whole.max()))
	sec.tabs = append(sec.tabs, t)
	sec.notes = append(sec.notes, stepsNote)
	if steps != nil {
		sec.tabs = append(sec.tabs, steps)
	}
	sec.goals = append(sec.goals, goal{
		measure:  firstGoal,
		tether:   ms(warm.first.median()),
		baseline: "cold " + ms(cold.first.median()),
		target:   "≤ 100 ms",
		verdict:  verdict(warm.first.median() <= 100*time.Millisecond),
	}, goal{
		measure:  wholeGoal,
		tether:   ms(warm.whole.median()),
		baseline: "cold " + ms(cold.whole.median()),
		target:   "≤ 300 ms",
		verdict:  verdict(warm.whole.median() <= 300*time.Millisecond),
	})
	return sec, nil
}

// echoTimes are the timings of a series of echo jobs.
type echoTimes struct {
	first, whole durations
	// rounds are the warm jobs' rounds, for their breakdown.
	rounds []warmRound
	// ns is the namespace they ran in.
	ns string
}

// poolBreakdown returns the warm jobs' breakdown (the node's audit log)
// and its note; without an audit log, no table and a note that says so.
func poolBreakdown(ctx context.Context, cfg *config, warm echoTimes) (*table, string, error) {
	var starts, inits durations
	for range len(warm.rounds) {
		start, initSum, err := processStart(ctx, cfg.tether)
		if err != nil {
			return nil, "", err
		}
		starts, inits = append(starts, start), append(inits, initSum)
	}
	start, initSum := starts.median(), inits.median()
	time.Sleep(time.Second) // the audit log is written asynchronously
	steps, err := warmBreakdown(filepath.Join(cfg.e2eDir, "logs", "audit.log"), warm.ns, warm.rounds)
	if err != nil {
		return nil, "No breakdown of the warm job: " + err.Error(), nil
	}
	return breakdownTable(start, initSum, steps, warm.rounds), "The warm job's breakdown below: its API requests as the node's API server saw them (its audit log: when each request arrived and was answered, " +
		"the attach until its upgrade), after each command's start, medians over the warm rounds; the process start is `tether version` run alone as often (the same binary and packages; median). " +
		"The claim's update and the attach overlap (the attach opens while the update is under way), and the budget's create runs beside the job.", nil
}

// poolEcho runs the interleaved warm and cold echo jobs, and the warm
// job again with the heap's pages faulted in one by one (unfaulted).
func poolEcho(ctx context.Context, cfg *config, n *node, ws *workspace, rounds int, log *slog.Logger) (warm, cold, unfaulted echoTimes, err error) {
	echo, err := ws.script("pool-echo.sh", "#!/bin/sh\necho hello\n")
	if err != nil {
		return warm, cold, unfaulted, err
	}
	k, err := newKubeEnv(n.kubeconfig, n.images)
	if err != nil {
		return warm, cold, unfaulted, err
	}
	pool := randomName("bench-")
	warm.ns = k.ns
	settings := kube.Spec{Namespace: k.ns, Image: n.images.build, HelperImage: n.images.helper}
	base := []string{"run", "--image", n.images.build, "--helper-image", n.images.helper, "--kubeconfig", n.kubeconfig, "--quiet"}
	for r := range rounds {
		wr, err := warmRun(ctx, cfg, k, settings, pool, append(append([]string{}, base...), "--pool", pool, echo), nil)
		if err != nil {
			return warm, cold, unfaulted, err
		}
		warm.rounds = append(warm.rounds, wr)
		warm.first, warm.whole = append(warm.first, wr.first), append(warm.whole, wr.whole)
		cf, cw, err := timedFirstOutput(ctx, nil, cfg.tether, append(append([]string{}, base...), echo)...)
		if err != nil {
			return warm, cold, unfaulted, fmt.Errorf("cold echo job: %w", err)
		}
		cold.first, cold.whole = append(cold.first, cf), append(cold.whole, cw)
		// The same warm job with the heap's pages faulted in one by one
		// (internal/startgc), for the side-by-side row.
		ur, err := warmRun(ctx, cfg, k, settings, pool, append(append([]string{}, base...), "--pool", pool, echo), []string{contract.HeapPrefaultVar + "=0"})
		if err != nil {
			return warm, cold, unfaulted, err
		}
		unfaulted.first, unfaulted.whole = append(unfaulted.first, ur.first), append(unfaulted.whole, ur.whole)
		log.Info("pool echo", "round", r+1, "warm_first", wr.first.Round(time.Millisecond), "warm", wr.whole.Round(time.Millisecond),
			"cold_first", cf.Round(time.Millisecond), "cold", cw.Round(time.Millisecond), "unfaulted_first", ur.first.Round(time.Millisecond))
	}
	return warm, cold, unfaulted, nil
}

// warmRun makes one warm pod of pool, waits warmSettle and runs the
// warm job (args, with env added to the environment), which must claim
// that pod.
func warmRun(ctx context.Context, cfg *config, k *kubeEnv, settings kube.Spec, pool string, args, env []string) (warmRound, error) {
	name, err := startWarmPod(ctx, k, settings, pool)
	if err != nil {
		return warmRound{}, err
	}
	// A warm pod waits for its job: the node is done starting it.
	time.Sleep(warmSettle)
	started := time.Now()
	wf, ww, err := timedFirstOutput(ctx, env, cfg.tether, args...)
	if err != nil {
		return warmRound{}, fmt.Errorf("warm echo job: %w", err)
	}
	// A job that missed the pool ran cold: the pod is left, idle.
	if got, gerr := k.cs.CoreV1().Pods(k.ns).Get(ctx, name, metav1.GetOptions{}); gerr == nil && got.Labels[kube.LabelWarm] != kube.WarmClaimed {
		_ = k.cs.CoreV1().Pods(k.ns).Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{})
		return warmRound{}, fmt.Errorf("the warm echo job did not claim the warm pod %s (labels %v)", name, got.Labels)
	}
	return warmRound{start: started, first: wf, whole: ww, pod: name}, nil
}

// startWarmPod makes one claimable warm pod of pool and returns its name.
func startWarmPod(ctx context.Context, k *kubeEnv, settings kube.Spec, pool string) (string, error) {
	objs, err := kube.WarmPod(settings, kube.WarmOptions{Pool: pool, MaxIdle: 5 * time.Minute})
	if err != nil {
		return "", err
	}
	pod, err := kube.Create(ctx, k.cs, objs, nil)
	if err != nil {
		return "", err
	}
	fail := func(err error) (string, error) {
		_ = pod.Delete(context.WithoutCancel(ctx))
		return "", fmt.Errorf("warm pod %s: %w", pod.Name, err)
	}
	if err := pod.WaitRunning(ctx, kube.WaitOptions{Timeout: 2 * time.Minute}); err != nil {
		return fail(err)
	}
	// The pod's phase says Running a moment after WaitRunning saw the
	// container start; MarkWarmReady wants it Running.
	for {
		got, err := pod.Get(ctx)
		if err != nil {
			return fail(err)
		}
		if got.Status.Phase == corev1.PodRunning {
			if _, err := kube.MarkWarmReady(ctx, k.cs, got); err != nil {
				return fail(err)
			}
			return pod.Name, nil
		}
		select {
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// timedFirstOutput runs bin with args; it returns how long after the
// start the first byte reached its stdout, and how long it ran. The
// output must be "hello\n".
func timedFirstOutput(ctx context.Context, env []string, bin string, args ...string) (first, whole time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, err
	}
	var stderr tailBuffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	br := bufio.NewReader(stdout)
	if _, err := br.Peek(1); err == nil {
		first = time.Since(start)
	}
	rest, _ := io.ReadAll(br)
	err = cmd.Wait()
	whole = time.Since(start)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %s", err, stderr.String())
	}
	if string(rest) != "hello\n" {
		return 0, 0, errors.New("printed " + fmt.Sprintf("%q", rest) + ", want \"hello\\n\"")
	}
	return first, whole, nil
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }
