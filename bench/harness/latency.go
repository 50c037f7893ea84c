package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"syscall"
	"time"
)

// shortPause spaces samples 5–25 ms apart at random, so they do not lock
// into the phase of anybody's timer.
func shortPause() time.Duration { return 5*time.Millisecond + rand.N(20*time.Millisecond) }

// pollPause spaces the GitLab emulation's samples over a whole read-logs
// poll period: a dot written right after the follower went to sleep waits
// ~500 ms, one written just before it wakes almost nothing.
func pollPause() time.Duration { return 5*time.Millisecond + rand.N(readLogsPoll) }

// latencyScript prints one '.' (no newline) each time a line arrives on
// the FIFO and ends when the FIFO's writer closes it.
func latencyScript(ws *workspace, fifo string) (string, error) {
	return ws.script("latency.sh", "#!/bin/sh\nexec 3<"+shellQuote(fifo)+"\nwhile read -r _ <&3; do printf .; done\n")
}

// sampleLatency runs the latency script through p and returns n samples:
// the time from writing a line to the FIFO (the script then prints a
// dot) to the dot arriving at the writer.
func sampleLatency(ctx context.Context, p relayPath, ws *workspace, n int, pause func() time.Duration) (durations, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	fifo := ws.path("latency.fifo")
	_ = os.Remove(fifo)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		return nil, fmt.Errorf("create the latency FIFO: %w", err)
	}
	defer os.Remove(fifo)
	script, err := latencyScript(ws, fifo)
	if err != nil {
		return nil, err
	}
	// Read-write: opening never blocks, and the script's open does not
	// wait for a writer. Closing it is the script's EOF.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open the latency FIFO: %w", err)
	}
	defer w.Close()
	sink := newStampSink()
	done := make(chan error, 1)
	go func() {
		_, err := p.run(ctx, script, sink)
		done <- err
	}()
	samples, err := measureDots(w, sink, done, p.label(), n, pause)
	if err != nil {
		return nil, err
	}
	w.Close()
	if err := <-done; err != nil {
		return nil, fmt.Errorf("%s: %w", p.label(), err)
	}
	return samples, nil
}

// measureDots writes a line to w (the script's FIFO) n+1 times, pause()
// apart, and times each dot arriving at sink; the first, which also waits
// for the path to start, is not a sample. done delivers the path's end.
func measureDots(w io.Writer, sink *stampSink, done <-chan error, label string, n int, pause func() time.Duration) (durations, error) {
	trigger := func(timeout time.Duration) (time.Duration, error) {
		start := time.Now()
		if _, err := w.Write([]byte("\n")); err != nil {
			return 0, fmt.Errorf("write the FIFO: %w", err)
		}
		select {
		case st := <-sink.ch:
			if st.data != "." {
				return 0, fmt.Errorf("%s: got %q, want one dot per write", label, st.data)
			}
			return st.at.Sub(start), nil
		case err := <-done:
			return 0, fmt.Errorf("%s ended early: %w", label, errors.Join(err, errors.New("no dot")))
		case <-time.After(timeout):
			return 0, fmt.Errorf("%s: no dot within %s", label, timeout)
		}
	}
	if _, err := trigger(5 * time.Minute); err != nil {
		return nil, err
	}
	var samples durations
	for range n {
		time.Sleep(pause())
		d, err := trigger(30 * time.Second)
		if err != nil {
			return nil, err
		}
		samples = append(samples, d)
	}
	return samples, nil
}

func latencySection(ctx context.Context, cfg *config, ws *workspace, log *slog.Logger) (*section, error) {
	gitlabSamples := max(cfg.latency/5, 10)
	sec := &section{title: "Partial-output latency"}
	sec.notes = append(sec.notes, fmt.Sprintf(
		"A script waits for a line on a FIFO and answers each with `printf .` (no newline). The harness writes the line and times until the dot reaches the path's writer "+
			"(for tether: `client.Run`'s Options.Output, through tether-shim and the local backend). %d samples per path (%d for the GitLab emulation, whose samples take ~500 ms each), "+
			"5–25 ms apart at random (the GitLab emulation's 5–505 ms apart, uniformly over its 500 ms poll period). The shim forwards a partial line at once when nothing more waits in the pipe.", cfg.latency, gitlabSamples))
	t := &table{head: []string{"path", "samples", "p50", "p90", "p99", "max"}}
	type result struct {
		p relayPath
		d durations
	}
	var results []result
	for _, p := range []relayPath{
		catPath{shell: cfg.shell},
		tetherPath{shim: cfg.shim, shell: cfg.shell},
		gitlabPath{self: cfg.self, shell: cfg.shell, ws: ws},
	} {
		n, pause := cfg.latency, shortPause
		if _, ok := p.(gitlabPath); ok {
			n, pause = gitlabSamples, pollPause
		}
		d, err := sampleLatency(ctx, p, ws, n, pause)
		if err != nil {
			return nil, err
		}
		log.Info("latency", "path", p.label(), "p50", d.percentile(50), "p99", d.percentile(99))
		t.add(p.label(), fmt.Sprint(len(d)), ms(d.percentile(50)), ms(d.percentile(90)), ms(d.percentile(99)), ms(d.max()))
		results = append(results, result{p, d})
	}
	sec.tabs = append(sec.tabs, t)
	tether, gitlab := results[1].d, results[2].d
	sec.goals = append(sec.goals, goal{
		measure:  "partial-output latency in-process, local (`printf .` → writer)",
		tether:   fmt.Sprintf("p50 %s, p99 %s", ms(tether.percentile(50)), ms(tether.percentile(99))),
		baseline: fmt.Sprintf("GitLab emulation p50 %s, p99 %s", ms(gitlab.percentile(50)), ms(gitlab.percentile(99))),
		target:   "info (the CLI row decides)",
		verdict:  "info",
	})
	return sec, nil
}
