package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"time"
)

// runTimeout bounds one run of any measurement.
const runTimeout = 15 * time.Minute

// relayPaths returns the paths the relay section compares; the first is
// the baseline the ratios are against.
func relayPaths(cfg *config, ws *workspace) []relayPath {
	all := []struct {
		key string
		p   relayPath
	}{
		{"cat", catPath{shell: cfg.shell}},
		{"tether", tetherPath{shim: cfg.shim, shell: cfg.shell}},
		{"tether-memory", tetherPath{shim: cfg.shim, shell: cfg.shell, memoryReplay: true}},
		{"gitlab", gitlabPath{self: cfg.self, shell: cfg.shell, ws: ws}},
	}
	var paths []relayPath
	for _, a := range all {
		if a.key == "cat" || len(cfg.relayPaths) == 0 || cfg.relayPaths[a.key] {
			paths = append(paths, a.p)
		}
	}
	return paths
}

// expectedLines is how many newlines total bytes of shape s hold.
func expectedLines(s shape, total int64) int64 {
	return total / int64(len(s.unit)) * int64(bytes.Count(s.unit, []byte{'\n'}))
}

// relayOnce runs script through p once and checks every byte arrived.
func relayOnce(ctx context.Context, p relayPath, script string, s shape, total int64) (outcome, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	var sink countSink
	oc, err := p.run(ctx, script, &sink)
	if err != nil {
		return outcome{}, err
	}
	if sink.n != total || sink.lines != expectedLines(s, total) {
		return outcome{}, fmt.Errorf("%s: received %d bytes with %d newlines, want %d with %d", p.label(), sink.n, sink.lines, total, expectedLines(s, total))
	}
	return oc, nil
}

func relaySection(ctx context.Context, cfg *config, ws *workspace, log *slog.Logger) (*section, error) {
	sec := &section{title: "Relay throughput"}
	sec.notes = append(sec.notes, fmt.Sprintf(
		"%s of script output per run (`cat` of a %d MiB data file in the page cache), through each path into a counting sink. "+
			"%d runs per path, the paths interleaved in each round so load hits them alike; the verdict uses the ratio of medians (path's median throughput / the `cat` relay's), the ratio of best runs is shown beside it. "+
			"Relay CPU = CPU time of the relay alone (the shim + this process's client session for tether; `cat` + the reading loop for the baseline; "+
			"`tee` + read-logs + the runner-side parser for the GitLab emulation), not the script's — a load-independent cost measure.",
		gib(cfg.bytes), chunkSize>>20, cfg.repeat))
	paths := relayPaths(cfg, ws)
	for _, s := range shapes() {
		script, err := ws.relayScript(s, cfg.bytes)
		if err != nil {
			return nil, err
		}
		results := make([][]outcome, len(paths))
		for r := range cfg.repeat {
			for i, p := range paths {
				oc, err := relayOnce(ctx, p, script, s, cfg.bytes)
				if err != nil {
					return nil, fmt.Errorf("relay %s: %w", s.label, err)
				}
				results[i] = append(results[i], oc)
				log.Info("relay", "shape", s.name, "path", p.label(), "run", r+1,
					"GiB/s", fmt.Sprintf("%.3f", throughput(cfg.bytes, oc.wall)), "wall", oc.wall.Round(time.Millisecond))
			}
		}
		t := &table{head: []string{"path (" + s.label + ")", "median GiB/s", "range GiB/s", "vs cat (medians)", "vs cat (bests)", "relay CPU s/GiB", "bytes on the wire"}}
		base, baseBest := walls(results[0]).median(), walls(results[0]).min()
		for i, p := range paths {
			w := walls(results[i])
			ratio := float64(base) / float64(w.median())
			t.add(p.label(),
				fmt.Sprintf("%.3f", throughput(cfg.bytes, w.median())),
				fmt.Sprintf("%.3f–%.3f", throughput(cfg.bytes, w.max()), throughput(cfg.bytes, w.min())),
				fmt.Sprintf("%.3f×", ratio),
				fmt.Sprintf("%.3f×", float64(baseBest)/float64(w.min())),
				fmt.Sprintf("%.2f", cpus(results[i]).median().Seconds()/(float64(cfg.bytes)/(1<<30))),
				wire(results[i], cfg.bytes))
			switch p := p.(type) {
			case tetherPath:
				if !p.memoryReplay {
					sec.goals = append(sec.goals, goal{
						measure:  "relay throughput in-process, " + s.label + " (" + gib(cfg.bytes) + ")",
						tether:   fmt.Sprintf("%.2f× cat (%.2f GiB/s)", ratio, throughput(cfg.bytes, w.median())),
						baseline: gitlabRatio(results, paths, base),
						target:   "info (the CLI row decides)",
						verdict:  "info",
					})
				}
			}
		}
		sec.tabs = append(sec.tabs, t)
	}
	return sec, nil
}

// gitlabRatio formats the GitLab emulation's ratio to cat for the summary.
func gitlabRatio(results [][]outcome, paths []relayPath, base time.Duration) string {
	for i, p := range paths {
		if _, ok := p.(gitlabPath); ok {
			return fmt.Sprintf("GitLab emulation %.3f× cat", float64(base)/float64(walls(results[i]).median()))
		}
	}
	return ""
}

// wire describes a tether run's record stream size against the output's
// ("" for the other paths).
func wire(ocs []outcome, total int64) string {
	if len(ocs) == 0 || ocs[0].stream == 0 {
		return ""
	}
	return fmt.Sprintf("%s records (+%.1f%%)", gib(ocs[0].stream), 100*float64(ocs[0].stream-total)/float64(total))
}

func walls(ocs []outcome) durations {
	d := make(durations, len(ocs))
	for i, o := range ocs {
		d[i] = o.wall
	}
	return d
}

func cpus(ocs []outcome) durations {
	d := make(durations, len(ocs))
	for i, o := range ocs {
		d[i] = o.relayCPU
	}
	return d
}
