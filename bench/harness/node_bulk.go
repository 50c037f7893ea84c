package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"log/slog"
	"os/exec"
	"strings"
	"time"
)

// bulkLine is the 80-byte line (newline included) of the bulk job.
const bulkLine = "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ build step ok"

// hashSink hashes and counts what it receives, so a bulk job's output is
// checked without holding it.
type hashSink struct {
	h hash.Hash
	n int64
}

func newHashSink() *hashSink { return &hashSink{h: sha256.New()} }

func (s *hashSink) Write(p []byte) (int, error) {
	s.n += int64(len(p))
	return s.h.Write(p)
}

func (s *hashSink) sum() string { return hex.EncodeToString(s.h.Sum(nil)) }

// bulkJobs runs a job printing cfg.nodeBytes of 80-byte lines through
// `tether run --image` and through `kubectl run --rm -i` (the same command
// in the same image), interleaved, and adds how long each took and whether
// every byte arrived. Both pay for the node's own path (the container
// runtime's log writer, the kubelet, the API server), which dominates.
func bulkJobs(ctx context.Context, cfg *config, n *node, ws *workspace, sec *section, log *slog.Logger) error {
	cmd := fmt.Sprintf("yes %s | head -c %d", bulkLine, cfg.nodeBytes)
	script, err := ws.script("bulk.sh", "#!/bin/sh\n"+cmd+"\n")
	if err != nil {
		return err
	}
	want := sha256.New()
	line := []byte(bulkLine + "\n")
	for left := cfg.nodeBytes; left > 0; left -= int64(len(line)) {
		want.Write(line[:min(int64(len(line)), left)])
	}
	wantSum := hex.EncodeToString(want.Sum(nil))

	run := func(c *exec.Cmd) (*hashSink, time.Duration, error) {
		sink := newHashSink()
		var stderr strings.Builder
		c.Stdout, c.Stderr = sink, &stderr
		start := time.Now()
		err := c.Run()
		if err != nil {
			err = fmt.Errorf("%s: %w: %s", strings.Join(c.Args, " "), err, tailOf([]byte(stderr.String()), 600))
		}
		return sink, time.Since(start), err
	}
	var tetherRuns, kubectlRuns durations
	kubectlShort := 0
	var kubectlGot int64
	for r := range cfg.repeat {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		sink, d, err := run(exec.CommandContext(rctx, cfg.tether, "run", "--image", n.images.build, "--helper-image", n.images.helper, "--kubeconfig", n.kubeconfig, "--quiet", script))
		cancel()
		if err != nil {
			return fmt.Errorf("tether bulk job: %w", err)
		}
		if sink.n != cfg.nodeBytes || sink.sum() != wantSum {
			return fmt.Errorf("tether bulk job delivered %d bytes (sha256 %s), want %d exact bytes", sink.n, sink.sum(), cfg.nodeBytes)
		}
		tetherRuns = append(tetherRuns, d)

		rctx, cancel = context.WithTimeout(ctx, 10*time.Minute)
		sink, d, err = run(exec.CommandContext(rctx, n.kubectl, "--kubeconfig", n.kubeconfig, "run", randomName("bench-bulk-"),
			"--rm", "-i", "--quiet", "--restart=Never", "--image", n.images.build, "--image-pull-policy=Never", "--", "sh", "-c", cmd))
		cancel()
		if err != nil {
			return fmt.Errorf("kubectl bulk pod: %w", err)
		}
		if sink.sum() != wantSum {
			kubectlShort++
		}
		kubectlGot += sink.n
		kubectlRuns = append(kubectlRuns, d)
		log.Info("node bulk", "round", r+1, "tether", tetherRuns[r].Round(time.Millisecond), "kubectl", kubectlRuns[r].Round(time.Millisecond))
	}
	mbps := func(d time.Duration) string {
		return fmt.Sprintf("%.1f MB/s", float64(cfg.nodeBytes)/1e6/d.Seconds())
	}
	t := &table{head: []string{fmt.Sprintf("%d MB of 80-byte lines through real attach", cfg.nodeBytes/1e6), "median (whole job)", "range", "throughput (median)", "output"}}
	t.add("`tether run --image "+n.images.build+" bulk.sh`", ms(tetherRuns.median()), ms(tetherRuns.min())+"–"+ms(tetherRuns.max()), mbps(tetherRuns.median()),
		fmt.Sprintf("exact in %d/%d", cfg.repeat, cfg.repeat))
	t.add("`kubectl run --rm -i --restart=Never … -- sh -c '…'`", ms(kubectlRuns.median()), ms(kubectlRuns.min())+"–"+ms(kubectlRuns.max()), mbps(kubectlRuns.median()),
		fmt.Sprintf("exact in %d/%d (%.1f%% of the bytes arrived)", cfg.repeat-kubectlShort, cfg.repeat, 100*float64(kubectlGot)/float64(cfg.nodeBytes*int64(cfg.repeat))))
	sec.tabs = append(sec.tabs, t)
	sec.notes = append(sec.notes, fmt.Sprintf("Bulk job: %d bytes of 80-byte lines (`%s`), whole CLI invocations as for the echo job, %d rounds interleaved. "+
		"Tether's output is checked by SHA-256. Most of the time goes to the node's path that every container's output takes (containerd's log writer, the kubelet, the API server), not to tether or tether-shim.",
		cfg.nodeBytes, strings.Replace(cmd, bulkLine, "<line>", 1), cfg.repeat))
	return nil
}
