package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// The one-core rows run the CLI section's two command lines again with the
// whole process tree bound to one CPU (taskset), as in a pod whose
// cpuset holds one CPU. They are information, not a verdict: they show
// where `cat`'s relay CPU goes when the writer and `cat` share a core (its
// fast mode, which a busy machine also gives it), and Tether's cost there.

// oneCoreResult is what the one-core measurement adds to the CLI section.
type oneCoreResult struct {
	tab   *table
	note  string
	goals []goal
}

// cliOneCore measures both command lines bound to the first CPU this
// process may run on, for every output shape.
func cliOneCore(ctx context.Context, cfg *config, ws *workspace, catCLI, tetherCLI cliPath, out *os.File, log *slog.Logger) (oneCoreResult, error) {
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		return oneCoreResult{}, fmt.Errorf("the CLI's one-core rows need taskset (Debian package util-linux): %w", err)
	}
	cpu, err := firstAllowedCPU()
	if err != nil {
		return oneCoreResult{}, err
	}
	bind := func(p cliPath) cliPath {
		return cliPath{name: p.name, argv: func(script string) []string {
			return append([]string{taskset, "-c", strconv.Itoa(cpu)}, p.argv(script)...)
		}}
	}
	res := oneCoreResult{
		tab: &table{head: []string{"shape, one core", "path", "median GiB/s", "vs cat (medians)", "relay CPU s/GiB (median)", "relay CPU s/GiB (range)", "CPU vs cat's"}},
		note: fmt.Sprintf("One core: the same command lines under `taskset -c %d` (the script, the relay and the sink on one CPU, as in a pod whose cpuset has one), %d rounds interleaved. "+
			"`cat` is at its fastest there: the writer fills the 64 KiB pipe and `cat` copies it out while it is still in the core's cache. "+
			"Tether's block records are at most 16 KiB, so the shim moves each with its own system calls whether or not the data is in cache. Information only: the verdict is the two-core rows'.",
			cpu, cfg.repeat),
	}
	paths := []cliPath{bind(catCLI), bind(tetherCLI)}
	for _, s := range shapes() {
		raw, err := ws.relayScript(s, cfg.bytes)
		if err != nil {
			return oneCoreResult{}, err
		}
		script, timesFile, err := ws.timedScript(raw)
		if err != nil {
			return oneCoreResult{}, err
		}
		results, err := measureCLI(ctx, cfg, paths, s, script, timesFile, out, log)
		if err != nil {
			return oneCoreResult{}, fmt.Errorf("one core: %w", err)
		}
		perGiB := func(d time.Duration) float64 { return d.Seconds() / (float64(cfg.bytes) / (1 << 30)) }
		base, teth := results[0], results[1]
		speed := float64(walls(base).median()) / float64(walls(teth).median())
		cpuRatio := float64(cpus(teth).median()) / float64(max(cpus(base).median(), time.Millisecond))
		for i, p := range paths {
			c := cpus(results[i])
			row := []string{s.label, p.name, fmt.Sprintf("%.3f", throughput(cfg.bytes, walls(results[i]).median())), "1×",
				fmt.Sprintf("%.2f", perGiB(c.median())), fmt.Sprintf("%.2f–%.2f", perGiB(c.min()), perGiB(c.max())), "1×"}
			if i == 1 {
				row[3], row[6] = fmt.Sprintf("%.2f×", speed), fmt.Sprintf("%.1f×", cpuRatio)
			}
			res.tab.add(row...)
		}
		res.goals = append(res.goals, goal{
			measure:  "relay CPU per GiB via the CLI on one core, " + s.label,
			tether:   fmt.Sprintf("%.2f s/GiB (%.1f× cat's; %.2f× cat's speed)", perGiB(cpus(teth).median()), cpuRatio, speed),
			baseline: fmt.Sprintf("cat %.2f s/GiB", perGiB(cpus(base).median())),
			target:   "info (the two-core rows decide)",
			verdict:  "info",
		})
	}
	return res, nil
}

// firstAllowedCPU returns the lowest-numbered CPU this process may run on.
func firstAllowedCPU() (int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 0, fmt.Errorf("read this process's CPU affinity: %w", err)
	}
	for cpu := range 1024 {
		if set.IsSet(cpu) {
			return cpu, nil
		}
	}
	return 0, fmt.Errorf("this process's CPU affinity names no CPU")
}
