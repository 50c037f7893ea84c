package main

import (
	"context"
	"debug/elf"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/local"
)

// rssSampler samples a process's VmRSS until stopped.
type rssSampler struct {
	pid     int
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	samples []int64
	hwm     int64 // VmHWM read at stop
	err     error
}

// rssInterval is how often VmRSS is sampled.
const rssInterval = 50 * time.Millisecond

func startSampler(pid int) *rssSampler {
	s := &rssSampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(rssInterval)
		defer t.Stop()
		for {
			rss, _, err := memStatus(pid)
			s.mu.Lock()
			if err == nil {
				s.samples = append(s.samples, rss)
			}
			s.mu.Unlock()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// finish stops sampling and reads VmHWM (the process must still run).
func (s *rssSampler) finish() {
	close(s.stop)
	<-s.done
	rss, hwm, err := memStatus(s.pid)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
	if err == nil {
		s.samples = append(s.samples, rss)
		s.hwm = hwm
	}
}

// maxIn returns the largest sample in the fraction [from, to) of the run.
func maxIn(samples []int64, from, to float64) int64 {
	n := len(samples)
	lo, hi := int(from*float64(n)), int(to*float64(n))
	hi = min(max(hi, lo+1), n)
	var m int64
	for _, v := range samples[lo:hi] {
		m = max(m, v)
	}
	return m
}

// binaryInfo returns a binary's size and whether it is statically linked
// (no program interpreter).
func binaryInfo(path string) (int64, bool, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, false, err
	}
	f, err := elf.Open(path)
	if err != nil {
		return 0, false, fmt.Errorf("read %s as ELF: %w", path, err)
	}
	defer f.Close()
	static := true
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			static = false
		}
	}
	return st.Size(), static, nil
}

// idleRSS starts a shim, and measures VmRSS after it settled, then again
// after one small job.
func idleRSS(ctx context.Context, cfg *config, ws *workspace) (fresh, afterJob int64, err error) {
	shim, err := local.Start(ctx, local.Config{Shim: cfg.shim, Args: []string{"--shell=" + cfg.shell}})
	if err != nil {
		return 0, 0, err
	}
	defer shim.Close()
	time.Sleep(500 * time.Millisecond)
	if fresh, _, err = memStatus(shim.Pid()); err != nil {
		return 0, 0, err
	}
	script, err := ws.script("hello.sh", "#!/bin/sh\necho hello\n")
	if err != nil {
		return 0, 0, err
	}
	if _, err := client.Run(ctx, shim, client.Job{Scripts: []string{script}}, client.Options{Output: io.Discard}); err != nil {
		return 0, 0, fmt.Errorf("small job: %w", err)
	}
	time.Sleep(500 * time.Millisecond)
	if afterJob, _, err = memStatus(shim.Pid()); err != nil {
		return 0, 0, err
	}
	return fresh, afterJob, nil
}

func memorySection(ctx context.Context, cfg *config, ws *workspace, log *slog.Logger) (*section, error) {
	sec := &section{title: "Shim memory and size"}
	size, static, err := binaryInfo(cfg.shim)
	if err != nil {
		return nil, err
	}
	fresh, afterJob, err := idleRSS(ctx, cfg, ws)
	if err != nil {
		return nil, err
	}
	linkage := "static"
	if !static {
		linkage = "DYNAMIC"
	}
	t := &table{head: []string{"measure", "value"}}
	name := cfg.shim
	if rel, err := filepath.Rel(cfg.repo, cfg.shim); err == nil && !strings.HasPrefix(rel, "..") {
		name = rel // no machine-specific path in the results
	}
	t.add("binary "+name+" ("+linkage+")", mib(size))
	t.add("idle VmRSS, 0.5 s after start", mib(fresh))
	t.add("idle VmRSS, 0.5 s after a one-line job", mib(afterJob))
	sec.tabs = append(sec.tabs, t)
	sec.goals = append(sec.goals,
		goal{measure: "shim binary size", tether: mib(size) + ", " + linkage, baseline: "—", target: "≤ 3 MiB, static",
			verdict: verdict(size <= 3<<20 && static)},
		goal{measure: "shim idle RSS", tether: mib(max(fresh, afterJob)), baseline: "tini ≈ 1 MiB", target: "≤ 4 MiB",
			verdict: verdict(max(fresh, afterJob) <= 4<<20)},
	)

	s := shapes()[1] // 80-byte lines: the most records per byte
	script, err := ws.relayScript(s, cfg.bigBytes)
	if err != nil {
		return nil, err
	}
	big := &table{head: []string{"replay store (" + gib(cfg.bigBytes) + " of " + s.label + ")", "GiB/s", "samples", "max VmRSS, first 10%", "max VmRSS, last 10%", "max VmRSS", "VmHWM at end"}}
	for _, memoryReplay := range []bool{false, true} {
		var smp *rssSampler
		p := tetherPath{shim: cfg.shim, shell: cfg.shell, memoryReplay: memoryReplay,
			watch: func(pid int) func() {
				smp = startSampler(pid)
				return smp.finish
			}}
		oc, err := relayOnce(ctx, p, script, s, cfg.bigBytes)
		if err != nil {
			return nil, fmt.Errorf("memory run: %w", err)
		}
		if smp.err != nil {
			return nil, fmt.Errorf("memory run: %w", smp.err)
		}
		label := "spool file (`--spool-dir`, the pod's and the local backend's default)"
		if memoryReplay {
			label = "memory replay window (4 MiB default)"
		}
		all := maxIn(smp.samples, 0, 1)
		log.Info("memory", "store", label, "max_rss", mib(all), "hwm", mib(smp.hwm), "samples", len(smp.samples))
		big.add(label, fmt.Sprintf("%.3f", throughput(cfg.bigBytes, oc.wall)), fmt.Sprint(len(smp.samples)),
			mib(maxIn(smp.samples, 0, 0.1)), mib(maxIn(smp.samples, 0.9, 1)), mib(all), mib(smp.hwm))
		if !memoryReplay {
			sec.goals = append(sec.goals, goal{
				measure:  "shim RSS while relaying " + gib(cfg.bigBytes),
				tether:   fmt.Sprintf("max %s (first 10%%: %s, last 10%%: %s), VmHWM %s", mib(all), mib(maxIn(smp.samples, 0, 0.1)), mib(maxIn(smp.samples, 0.9, 1)), mib(smp.hwm)),
				baseline: "—",
				target:   "flat",
				verdict:  verdict(maxIn(smp.samples, 0.9, 1) <= maxIn(smp.samples, 0, 0.1)+1<<20),
			})
		}
	}
	sec.tabs = append(sec.tabs, big)
	sec.notes = append(sec.notes, fmt.Sprintf("VmRSS of the tether-shim process sampled every %s from /proc; VmHWM (peak RSS) read just before the shim exits. "+
		"\"Flat\" means the last 10%% of the run peaks no more than 1 MiB above the first 10%%. "+
		"The spool run writes the whole record stream to a file in %s: once the page cache's dirty-page limit is reached its speed is the disk's, "+
		"which is why it is slower than the 1 GiB runs above.", rssInterval, os.TempDir()))
	return sec, nil
}
