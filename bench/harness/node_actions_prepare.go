package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/tether-ci/tether/integration/actions"
	"github.com/tether-ci/tether/internal/testing/actionsrunner"
)

// Shape of the tool cache actionsPrepareSection copies: 100 MB of
// incompressible files in a tool-cache layout.
const (
	benchToolFiles    = 1000
	benchToolFileSize = 100_000
)

// actionsPrepareSection times prepare_job of `tether actions` (the whole
// hook call, driven by the runner stand-in) with an empty workspace and
// with a 100 MB tool cache on the runner's disk, which prepare_job copies
// into the job's pod; the difference is what the copy adds.
func actionsPrepareSection(ctx context.Context, cfg *config, _ *workspace, log *slog.Logger) (*section, error) {
	sec := &section{title: "GitHub Actions: prepare_job and the runner's disk (real node)"}
	n, why := findNode(ctx, cfg, os.Getenv)
	if n == nil {
		sec.notes = append(sec.notes, "**Skipped: no node** — "+why+".")
		return sec, nil
	}
	var empty, filled durations
	for round := range cfg.repeat {
		for _, tool := range []bool{false, true} {
			d, err := timePrepare(ctx, cfg, n, tool)
			if err != nil {
				sec.notes = append(sec.notes, "**prepare_job FAILED:** "+tailOf([]byte(err.Error()), 800))
				return sec, nil
			}
			if tool {
				filled = append(filled, d)
			} else {
				empty = append(empty, d)
			}
			log.Info("actions prepare_job", "round", round+1, "tool cache", tool, "took", d.Round(time.Millisecond))
		}
	}
	t := &table{head: []string{"`tether actions` prepare_job (busybox job container)", "median (whole hook call)", "range", "added by the copy (median)"}}
	t.add("empty workspace, empty tool cache", ms(empty.median()), ms(empty.min())+"–"+ms(empty.max()), "—")
	t.add(fmt.Sprintf("%d MB tool cache (%d files)", benchToolFiles*benchToolFileSize/1_000_000, benchToolFiles), ms(filled.median()), ms(filled.min())+"–"+ms(filled.max()),
		ms(filled.median()-empty.median()))
	sec.tabs = append(sec.tabs, t)
	sec.notes = append(sec.notes, fmt.Sprintf("Each of %d rounds runs prepare_job (then cleanup_job, not timed) for a runner whose disk is empty and for one whose _work/_tool holds %d random files of %d bytes in 10 directories, "+
		"which prepare_job copies into the pod over the attach stream (every file checked by its sha256); interleaved; median.", cfg.repeat, benchToolFiles, benchToolFileSize))
	rounds := max(cfg.repeat, poolRounds)
	pt, err := actionsPoolPrepare(ctx, cfg, n, rounds, log)
	if err != nil {
		sec.notes = append(sec.notes, "**prepare_job on a warm pod FAILED:** "+tailOf([]byte(err.Error()), 800))
		return sec, nil
	}
	t = &table{head: []string{"`tether actions` prepare_job (busybox job container, empty workspace)", "median (whole hook call)", "range"}}
	t.add("warm: "+actions.EnvPool+" (claims a warm pod)", ms(pt.warm.median()), ms(pt.warm.min())+"–"+ms(pt.warm.max()))
	t.add("cold: a new pod", ms(pt.cold.median()), ms(pt.cold.min())+"–"+ms(pt.cold.max()))
	sec.tabs = append(sec.tabs, t)
	sec.notes = append(sec.notes, fmt.Sprintf("Warm vs cold: each of %d rounds makes one warm pod of a `for: actions` pool with the job's shape (client/kube's WarmPod, as `tether pool serve` does; not timed), "+
		"then times prepare_job with %s (it claims the warm pod) and without it (a new pod), interleaved; cleanup_job after each, not timed; median.", rounds, actions.EnvPool))
	return sec, nil
}

// timePrepare times one prepare_job of a fresh runner, its tool cache
// filled when tool is set, and cleans up after it.
func timePrepare(ctx context.Context, cfg *config, n *node, tool bool) (time.Duration, error) {
	root, err := os.MkdirTemp("", "bench-actions-prepare-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(root)
	r, err := benchRunner(cfg, n, root)
	if err != nil {
		return 0, err
	}
	if tool {
		buf := make([]byte, benchToolFileSize)
		for i := range benchToolFiles {
			dir := filepath.Join(r.Work, "_tool", "benchtool", "1.0.0", "x64", fmt.Sprintf("lib%d", i%10))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return 0, err
			}
			_, _ = rand.Read(buf)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file%04d.so", i)), buf, 0o644); err != nil {
				return 0, err
			}
		}
	}
	d, _, err := timedPrepare(ctx, r, n.images.build)
	return d, err
}

// timedPrepare times prepare_job of r for a job container of image, cleans
// up after it (not timed) and returns what the hook printed.
func timedPrepare(ctx context.Context, r *actionsrunner.Runner, image string) (time.Duration, string, error) {
	start := time.Now()
	res, err := r.PrepareJob(ctx, image, nil, nil)
	d := time.Since(start)
	defer func() { _, _ = r.CleanupJob(context.WithoutCancel(ctx)) }()
	if err != nil || res.ExitCode != 0 {
		return 0, "", fmt.Errorf("prepare_job: %v, exit %d: %s", err, res.ExitCode, tailOf(res.Stderr, 600))
	}
	return d, string(res.Stdout), nil
}
