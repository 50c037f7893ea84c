package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// The CLI section measures Tether as a user runs it: whole `tether run
// --local --quiet SCRIPT` invocations (bin/tether starting bin/tether-shim,
// defaults everywhere) against `sh SCRIPT | cat`, with stdout on /dev/null
// for throughput and on a pipe to this process for latency.

// cliPath runs a script through a whole command line.
type cliPath struct {
	name string
	// argv returns the command that runs script and writes its output to
	// stdout.
	argv func(script string) []string
}

func (p cliPath) label() string { return p.name }

// run runs the command with stdout on out (directly when out is a file)
// and measures its wall time and the CPU time of the whole process tree
// (the relay and the script: the caller subtracts the script's own).
func (p cliPath) run(ctx context.Context, script string, out io.Writer) (outcome, error) {
	argv := p.argv(script)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout = out
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return outcome{}, fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, tailOf([]byte(stderr.String()), 600))
	}
	var cpu time.Duration
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		// wait4's usage covers the process and every descendant it (or
		// they) waited for: the shim and its scripts, or the shell's
		// pipeline.
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return outcome{wall: wall, relayCPU: cpu}, nil
}

// cliPaths returns the baseline and tether's command line.
func cliPaths(cfg *config) (cat, tether cliPath) {
	cat = cliPath{name: "`sh SCRIPT \\| cat > /dev/null`", argv: func(script string) []string {
		return []string{cfg.shell, "-c", cfg.shell + " " + shellQuote(script) + " | cat"}
	}}
	tether = cliPath{name: "`tether run --local --quiet SCRIPT > /dev/null`", argv: func(script string) []string {
		return []string{cfg.tether, "run", "--local", "--quiet", "--shim", cfg.shim, "--shell", cfg.shell, script}
	}}
	return cat, tether
}

// timedScript wraps script so that it writes its own CPU time (the shell's
// and its children's, from the `times` builtin) to a file after its
// output: that is subtracted from a path's process-tree CPU time to leave
// the relay's.
func (w *workspace) timedScript(script string) (wrapped, timesFile string, err error) {
	timesFile = script + ".times"
	wrapped, err = w.script("timed-"+strings.TrimSuffix(baseName(script), ".sh")+".sh",
		"#!/bin/sh\n. "+shellQuote(script)+" || exit 1\ntimes > "+shellQuote(timesFile)+"\n")
	return wrapped, timesFile, err
}

func baseName(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// scriptCPU reads what `times` wrote: two lines of user and system time
// ("0m1.230000s 0m0.450000s": the shell's, then its children's).
func scriptCPU(timesFile string) (time.Duration, error) {
	b, err := os.ReadFile(timesFile)
	if err != nil {
		return 0, fmt.Errorf("read the script's CPU time: %w", err)
	}
	var total time.Duration
	fields := strings.Fields(string(b))
	if len(fields) != 4 {
		return 0, fmt.Errorf("the script's times output %q: want 4 fields", b)
	}
	for _, f := range fields {
		var min int
		var sec float64
		if _, err := fmt.Sscanf(strings.Replace(strings.TrimSuffix(f, "s"), "m", " ", 1), "%d %g", &min, &sec); err != nil {
			return 0, fmt.Errorf("the script's times output %q: %w", b, err)
		}
		total += time.Duration(min)*time.Minute + time.Duration(sec*float64(time.Second))
	}
	return total, nil
}

func cliSection(ctx context.Context, cfg *config, ws *workspace, log *slog.Logger) (*section, error) {
	sec := &section{title: "As a user runs it (CLI)"}
	catCLI, tetherCLI := cliPaths(cfg)
	sec.notes = append(sec.notes, fmt.Sprintf(
		"Whole command lines, defaults everywhere: %s against %s (bin/tether starts bin/tether-shim as its child; no spool file: `tether run --local` replays from the shim's memory window, kept in pipes; bulk output travels in block records the shim moves with splice/tee without reading them). "+
			"%s per run, %d rounds with the two interleaved; best and median. "+
			"Relay CPU = CPU time of the command's whole process tree (wait4's usage) minus the script's own (the shell's `times` after its output): "+
			"tether-shim + tether for Tether, `cat` (and the outer shell) for the baseline. The output goes to /dev/null as in a user's run; "+
			"its bytes are checked in the in-process rows below, which take the same path. "+
			"The relay CPU of `cat` is bimodal on this 2-core machine type: about 0.33–0.67 s/GiB when the writer and `cat` run on separate cores (a quiet machine), "+
			"about 0.16–0.20 s/GiB when they share one (other processes keep a core busy, or the one-core rows below); the range column shows each path's spread within this run.",
		tetherCLI.name, catCLI.name, gib(cfg.bytes), cfg.repeat))
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	defer devnull.Close()
	t := &table{head: []string{"shape", "path", "best GiB/s", "median GiB/s", "vs cat (bests)", "vs cat (medians)", "relay CPU s/GiB (median)", "relay CPU s/GiB (range)", "CPU vs cat's"}}
	for _, s := range shapes() {
		raw, err := ws.relayScript(s, cfg.bytes)
		if err != nil {
			return nil, err
		}
		script, timesFile, err := ws.timedScript(raw)
		if err != nil {
			return nil, err
		}
		paths := []cliPath{catCLI, tetherCLI}
		results, err := measureCLI(ctx, cfg, paths, s, script, timesFile, devnull, log)
		if err != nil {
			return nil, err
		}
		base, teth := results[0], results[1]
		bestRatio := float64(walls(base).min()) / float64(walls(teth).min())
		medRatio := float64(walls(base).median()) / float64(walls(teth).median())
		perGiB := func(d time.Duration) float64 { return d.Seconds() / (float64(cfg.bytes) / (1 << 30)) }
		cpuRatio := float64(cpus(teth).median()) / float64(max(cpus(base).median(), time.Millisecond))
		for i, p := range paths {
			w := walls(results[i])
			c := cpus(results[i])
			row := []string{s.label, p.name,
				fmt.Sprintf("%.3f", throughput(cfg.bytes, w.min())), fmt.Sprintf("%.3f", throughput(cfg.bytes, w.median())),
				"1×", "1×", fmt.Sprintf("%.2f", perGiB(c.median())), fmt.Sprintf("%.2f–%.2f", perGiB(c.min()), perGiB(c.max())), "1×"}
			if i == 1 {
				row[4], row[5], row[8] = fmt.Sprintf("%.2f×", bestRatio), fmt.Sprintf("%.2f×", medRatio), fmt.Sprintf("%.1f×", cpuRatio)
			}
			t.add(row...)
		}
		sec.goals = append(sec.goals,
			goal{
				measure:  "relay via the CLI, " + s.label + " (" + gib(cfg.bytes) + ", best of " + fmt.Sprint(cfg.repeat) + ")",
				tether:   fmt.Sprintf("%.2f× cat (%.2f GiB/s; medians %.2f×)", bestRatio, throughput(cfg.bytes, walls(teth).min()), medRatio),
				baseline: fmt.Sprintf("cat %.2f GiB/s", throughput(cfg.bytes, walls(base).min())),
				target:   "≥ 0.8× cat",
				verdict:  verdict(bestRatio >= 0.8),
			},
			goal{
				measure:  "relay CPU per GiB via the CLI (shim + client), " + s.label,
				tether:   fmt.Sprintf("%.2f s/GiB (%.1f× cat's)", perGiB(cpus(teth).median()), cpuRatio),
				baseline: fmt.Sprintf("cat %.2f s/GiB", perGiB(cpus(base).median())),
				target:   "≤ 1.5× cat's",
				verdict:  verdict(cpuRatio <= 1.5),
			})
	}
	sec.tabs = append(sec.tabs, t)

	oneCore, err := cliOneCore(ctx, cfg, ws, catCLI, tetherCLI, devnull, log)
	if err != nil {
		return nil, err
	}
	sec.tabs = append(sec.tabs, oneCore.tab)
	sec.notes = append(sec.notes, oneCore.note)
	sec.goals = append(sec.goals, oneCore.goals...)

	// Partial-output latency through the whole CLI: stdout is a pipe to
	// this process, which stamps each write.
	lt := &table{head: []string{"partial-output latency (CLI, stdout a pipe)", "samples", "p50", "p90", "p99", "max"}}
	var tetherLat durations
	for _, p := range []cliPath{catCLI, tetherCLI} {
		p.name = strings.ReplaceAll(p.name, " > /dev/null", "")
		d, err := sampleLatency(ctx, p, ws, cfg.latency, shortPause)
		if err != nil {
			return nil, fmt.Errorf("CLI latency: %w", err)
		}
		log.Info("CLI latency", "path", p.name, "p50", d.percentile(50), "p99", d.percentile(99))
		lt.add(p.name, fmt.Sprint(len(d)), ms(d.percentile(50)), ms(d.percentile(90)), ms(d.percentile(99)), ms(d.max()))
		if p.argv("")[0] == cfg.tether {
			tetherLat = d
		}
	}
	if tetherLat == nil {
		return nil, errors.New("CLI latency: tether was not measured")
	}
	sec.tabs = append(sec.tabs, lt)
	sec.notes = append(sec.notes, fmt.Sprintf("Latency: the FIFO script of the in-process measurement below, run by each command line; the harness reads the command's stdout pipe. %d samples, 5–25 ms apart at random.", cfg.latency))
	sec.goals = append(sec.goals, goal{
		measure:  "partial-output latency via the CLI, local (`printf .` → tether's stdout)",
		tether:   fmt.Sprintf("p50 %s, p99 %s", ms(tetherLat.percentile(50)), ms(tetherLat.percentile(99))),
		baseline: "see the table",
		target:   "p99 ≤ 2 ms",
		verdict:  verdict(tetherLat.percentile(99) <= 2*time.Millisecond),
	})
	return sec, nil
}

// measureCLI runs script through each path cfg.repeat times, the paths
// interleaved in each round, and returns each path's outcomes with the
// script's own CPU time taken out of the relay CPU.
func measureCLI(ctx context.Context, cfg *config, paths []cliPath, s shape, script, timesFile string, out *os.File, log *slog.Logger) ([][]outcome, error) {
	results := make([][]outcome, len(paths))
	for r := range cfg.repeat {
		for i, p := range paths {
			_ = os.Remove(timesFile)
			rctx, cancel := context.WithTimeout(ctx, runTimeout)
			oc, err := p.run(rctx, script, out)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("CLI relay %s: %w", s.label, err)
			}
			own, err := scriptCPU(timesFile)
			if err != nil {
				return nil, fmt.Errorf("CLI relay %s, %s: %w", s.label, p.name, err)
			}
			oc.relayCPU = max(oc.relayCPU-own, 0)
			results[i] = append(results[i], oc)
			log.Info("CLI relay", "shape", s.name, "path", p.name, "run", r+1,
				"GiB/s", fmt.Sprintf("%.3f", throughput(cfg.bytes, oc.wall)), "relay_cpu", oc.relayCPU.Round(time.Millisecond))
		}
	}
	return results, nil
}
