package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/tether-ci/tether/integration/actions"
	"github.com/tether-ci/tether/internal/testing/actionsrunner"
)

// actionsSteps times a step printing cfg.nodeBytes of 80-byte lines
// through `tether actions`, driven by the Actions runner stand-in, as a
// container step (the busybox image as an ephemeral container of the job's
// pod, under the pod's tether-shim) and as a script step (in the job
// container), interleaved in one job, and adds the throughput of each with
// whether every byte arrived.
func actionsSteps(ctx context.Context, cfg *config, n *node, sec *section, log *slog.Logger) error {
	cmd := fmt.Sprintf("yes %s | head -c %d", bulkLine, cfg.nodeBytes)
	want := sha256.New()
	line := []byte(bulkLine + "\n")
	for left := cfg.nodeBytes; left > 0; left -= int64(len(line)) {
		want.Write(line[:min(int64(len(line)), left)])
	}
	wantSum := hex.EncodeToString(want.Sum(nil))
	root, err := os.MkdirTemp("", "bench-actions-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	r, err := benchRunner(cfg, n, root)
	if err != nil {
		return err
	}
	// The job container has bash: the runner runs a script step with
	// bash (`bash --noprofile --norc -e -o pipefail FILE`).
	if res, err := r.PrepareJob(ctx, n.images.bash, nil, nil); err != nil || res.ExitCode != 0 {
		return fmt.Errorf("prepare_job: %v, exit %d: %s", err, res.ExitCode, tailOf(res.Stderr, 600))
	}
	defer func() {
		if res, err := r.CleanupJob(context.WithoutCancel(ctx)); err != nil || res.ExitCode != 0 {
			log.Error("cleanup_job", "err", err, "exit", res.ExitCode, "stderr", tailOf(res.Stderr, 600))
		}
	}()
	check := func(what string, res actionsrunner.Result, err error) error {
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", what, err)
		case res.ExitCode != 0:
			return fmt.Errorf("%s: exit %d: %s", what, res.ExitCode, tailOf(res.Stderr, 600))
		}
		sum := sha256.Sum256(res.Stdout)
		if int64(len(res.Stdout)) != cfg.nodeBytes || hex.EncodeToString(sum[:]) != wantSum {
			return fmt.Errorf("%s delivered %d bytes (sha256 %x), want %d exact bytes; %s", what, len(res.Stdout), sum, cfg.nodeBytes,
				firstDiff(res.Stdout, line))
		}
		return nil
	}
	var containerRuns, scriptRuns durations
	for round := range cfg.repeat {
		start := time.Now()
		res, err := r.RunContainer(ctx, actionsrunner.ContainerStep{Image: n.images.build, EntryPoint: "sh", Args: []string{"-c", cmd}})
		d := time.Since(start)
		if err := check("the container step", res, err); err != nil {
			return err
		}
		containerRuns = append(containerRuns, d)
		start = time.Now()
		// The runner runs a script step with bash -e -o pipefail, where
		// yes's SIGPIPE would fail the pipeline (141).
		res, err = r.RunScript(ctx, actionsrunner.Step{Script: "set +o pipefail\n" + cmd})
		d = time.Since(start)
		if err := check("the script step", res, err); err != nil {
			return err
		}
		scriptRuns = append(scriptRuns, d)
		log.Info("node actions steps", "round", round+1, "container", containerRuns[round].Round(time.Millisecond), "script", scriptRuns[round].Round(time.Millisecond))
	}
	mbps := func(d time.Duration) string {
		return fmt.Sprintf("%.1f MB/s", float64(cfg.nodeBytes)/1e6/d.Seconds())
	}
	t := &table{head: []string{fmt.Sprintf("%d MB of 80-byte lines as a GitHub Actions step (`tether actions`)", cfg.nodeBytes/1e6), "median (whole hook call)", "range", "throughput (median)", "output"}}
	t.add("container step (`run_container_step`, busybox `sh -c`)", ms(containerRuns.median()), ms(containerRuns.min())+"–"+ms(containerRuns.max()), mbps(containerRuns.median()),
		fmt.Sprintf("exact in %d/%d", cfg.repeat, cfg.repeat))
	t.add("script step (`run_script_step`)", ms(scriptRuns.median()), ms(scriptRuns.min())+"–"+ms(scriptRuns.max()), mbps(scriptRuns.median()),
		fmt.Sprintf("exact in %d/%d", cfg.repeat, cfg.repeat))
	sec.tabs = append(sec.tabs, t)
	sec.notes = append(sec.notes, fmt.Sprintf("Actions steps: one job (prepare_job with the bash image, as the runner's script steps need bash), %d rounds of a container step and a script step each printing %d bytes (`%s`), "+
		"each timed as the runner stand-in (internal/testing/actionsrunner) calls the hook: the hook process (its file delivery and copy-back included) and the stand-in's reading of its output. "+
		"The container step runs under the job pod's tether-shim in an ephemeral container (the step's container start included); its output is checked by SHA-256 like the script step's.",
		cfg.repeat, cfg.nodeBytes, "yes <line> | head -c N"))
	return nil
}

// firstDiff says where got first differs from repeated lines of line.
func firstDiff(got, line []byte) string {
	for off := 0; off < len(got); off += len(line) {
		end := min(off+len(line), len(got))
		if !bytes.Equal(got[off:end], line[:end-off]) {
			return fmt.Sprintf("first difference in the line at byte %d: %q", off, got[off:end])
		}
	}
	return "a prefix of the expected output"
}

// benchRunner is a runner stand-in under root whose hook is `tether
// actions` on the node n, its images never pulled; extraEnv is added to
// the hook's environment.
func benchRunner(cfg *config, n *node, root string, extraEnv ...string) (*actionsrunner.Runner, error) {
	env := append(os.Environ(),
		actions.EnvBin+"="+cfg.tether,
		actions.EnvKubeconfig+"="+n.kubeconfig,
		actions.EnvHelperImage+"="+n.images.helper,
		actions.EnvPullPolicy+"=Never",
		actions.EnvJobTimeout+"=30m",
	)
	env = append(env, extraEnv...)
	return actionsrunner.New(filepath.Join(root, "runner"), filepath.Join(cfg.repo, "deploy", "actions", "tether-hook.sh"), "bench", env)
}
