package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"
)

// sectionFunc measures one section.
type sectionFunc func(ctx context.Context, cfg *config, ws *workspace, log *slog.Logger) (*section, error)

func sectionFuncs() map[string]sectionFunc {
	return map[string]sectionFunc{
		"cli":             cliSection,
		"relay":           relaySection,
		"latency":         latencySection,
		"overhead":        overheadSection,
		"memory":          memorySection,
		"node":            nodeSection,
		"gitlab":          gitlabSection,
		"pool":            poolSection,
		"jobpath":         jobPathSection,
		"actions":         actionsSection,
		"actions-prepare": actionsPrepareSection,
	}
}

// run measures every enabled section, prints the results and writes the
// results file.
func run(ctx context.Context, cfg *config, log *slog.Logger) error {
	started := time.Now()
	m := describeMachine(runtime.Version())
	ws, err := newWorkspace()
	if err != nil {
		return err
	}
	defer ws.close()
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return fmt.Errorf("create the CPU profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("start the CPU profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	funcs := sectionFuncs()
	var secs []*section
	for _, name := range sectionNames() {
		if !cfg.enabled(name) {
			continue
		}
		log.Info("measuring", "section", name)
		sec, err := funcs[name](ctx, cfg, ws, log)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		secs = append(secs, sec)
	}
	var gobench []byte
	if cfg.gobench != "" {
		if gobench, err = os.ReadFile(cfg.gobench); err != nil {
			return fmt.Errorf("read the go test -bench output: %w", err)
		}
	}
	var doc bytes.Buffer
	writeResults(&doc, cfg, m, started, time.Since(started), secs, gobench)
	if _, err := os.Stdout.Write(doc.Bytes()); err != nil {
		return err
	}
	if cfg.out != "" {
		if err := os.WriteFile(cfg.out, doc.Bytes(), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", cfg.out, err)
		}
		log.Info("results written", "file", cfg.out)
	}
	return nil
}

// writeResults renders the results document.
func writeResults(w io.Writer, cfg *config, m machine, started time.Time, took time.Duration, secs []*section, gobench []byte) {
	fmt.Fprintln(w, "# Tether benchmark results")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Written by `make bench` (scripts/bench.sh → bench/harness). Every ratio compares measurements taken side by side in this one run on this one machine.")
	fmt.Fprintln(w)
	mt := &table{head: []string{"", ""}}
	mt.add("date", started.UTC().Format("2006-01-02 15:04 UTC"))
	mt.add("CPU", fmt.Sprintf("%s, %d cores", m.cpu, m.cores))
	if _, rest, ok := strings.Cut(string(gobench), "\ncpu: "); ok {
		name, _, _ := strings.Cut(rest, "\n")
		mt.add("CPU as Go reports it", strings.TrimSpace(name))
	}
	mt.add("memory", m.memory)
	mt.add("kernel", m.kernel)
	mt.add("Go", m.goVer)
	mt.add("shell", cfg.shell)
	mt.add("load average (1/5/15 min)", fmt.Sprintf("%s at the start, %s at the end", m.loadFrom, loadAverage()))
	mt.add("duration", took.Round(time.Second).String())
	mt.write(w)
	fmt.Fprintln(w)
	if end := loadAverage(); loaded(m.loadFrom, m.cores) || loaded(end, m.cores) {
		fmt.Fprintf(w, "**The machine was loaded during this run** (load average %s at the start and %s at the end on %d cores; "+
			"the node section's own pods load it at its end, and any other process running counts too). "+
			"Wall-clock numbers are pessimistic and noisy; the ratios are fairer because each baseline ran interleaved with the path it is compared with, "+
			"and the CPU-time columns depend much less on load.\n\n", m.loadFrom, end, m.cores)
	}
	fmt.Fprintln(w, "## Summary against the performance targets")
	fmt.Fprintln(w)
	st := &table{head: []string{"measure", "tether", "baseline", "target", "verdict"}}
	for _, s := range secs {
		for _, g := range s.goals {
			st.add(g.measure, g.tether, g.baseline, g.target, g.verdict)
		}
	}
	st.write(w)
	fmt.Fprintln(w)
	for _, s := range secs {
		fmt.Fprintln(w, "## "+s.title)
		fmt.Fprintln(w)
		for _, n := range s.notes {
			fmt.Fprintln(w, n)
			fmt.Fprintln(w)
		}
		for _, t := range s.tabs {
			t.write(w)
			fmt.Fprintln(w)
		}
	}
	if len(gobench) > 0 {
		fmt.Fprintln(w, "## Go benchmarks (`go test -bench`, hot paths)")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "```")
		fmt.Fprint(w, strings.TrimRight(string(gobench), "\n")+"\n")
		fmt.Fprintln(w, "```")
		fmt.Fprintln(w)
	}
}

// loaded reports whether the load average's first figure exceeds the
// core count.
func loaded(load string, cores int) bool {
	var one float64
	if _, err := fmt.Sscanf(load, "%g", &one); err != nil {
		return false
	}
	return one > float64(cores)
}
