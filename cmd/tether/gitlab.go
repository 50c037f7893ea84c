package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/pflag"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/gitlab"
	"github.com/tether-ci/tether/internal/version"
)

const gitlabUsage = `Usage: tether gitlab config|prepare|run SCRIPT STAGE|cleanup [--config FILE]

The GitLab Runner Custom executor driver: GitLab Runner calls these four
commands for every job (see docs/gitlab.md for the config.toml snippet).
  config    print the driver's JSON (builds_dir, hostname, shell, ...)
  prepare   create the job's pod and wait until it runs (its events go to the job log)
  run       deliver the stage script over the attach stream, run it, stream its output
  cleanup   delete the job's pod (idempotent)

Settings are flags, or keys of the YAML file --config FILE (default
$TETHER_CONFIG; the command line wins), named as tether run's flags:
namespace, kubeconfig, context, image (for jobs without one), helper-image,
gitlab-helper-image (git, caches, artifacts; "none": all in the build
container), pull-policy, idle-timeout, ttl-margin, builds-dir, cache-dir, shell (runs
every stage script; default: bash where the container has it, else sh),
verbose (-v), log-format and log-file (the driver's structured log, written
only when one of them is set: to log-file, else into the job log), and
the pod shaping of tether run: cpu,
memory, requests, limits, node-selector, toleration, pull-secret,
service-account, service, volume, label, annotation, pod-patch,
pod-patch-type, termination-grace-period (GitLab's
pod_termination_grace_period_seconds: seconds or a duration; also the grace
of cleanup's delete). Run 'tether gitlab help flags' for them all.

Exit codes follow the runner's contract: BUILD_FAILURE_EXIT_CODE when the
script failed (its own code written to BUILD_EXIT_CODE_FILE first),
SYSTEM_FAILURE_EXIT_CODE when the infrastructure failed.
`

// gitlabCmd is `tether gitlab`.
func gitlabCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	codes := gitlab.ReadExitCodes(os.Getenv)
	var f gitlabFlags
	if len(args) == 0 || args[0] == "--help" || args[0] == "-h" || args[0] == "help" {
		fmt.Fprint(stdout, gitlabUsage)
		if len(args) > 1 && args[1] == "flags" {
			fmt.Fprintf(stdout, "\nFlags (and config file keys):\n%s", newGitlabFlagSet(&f).FlagUsages())
		}
		if len(args) == 0 {
			return exitUsage
		}
		return 0
	}
	sub := args[0]
	want := map[string]int{"config": 0, "prepare": 0, "run": 2, "cleanup": 0}
	n, ok := want[sub]
	if !ok {
		fmt.Fprintf(stderr, "tether gitlab: unknown command %q\n\n%s", sub, gitlabUsage)
		return codes.SystemFailure
	}
	pos, err := parseGitlabFlags(&f, args[1:], os.Getenv)
	if errors.Is(err, pflag.ErrHelp) {
		fmt.Fprintf(stdout, "%s\nFlags (and config file keys):\n%s", gitlabUsage, newGitlabFlagSet(&gitlabFlags{}).FlagUsages())
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "tether gitlab %s: %v\n", sub, err)
		return codes.SystemFailure
	}
	if len(pos) != n {
		fmt.Fprintf(stderr, "tether gitlab %s: want %d arguments, got %d\n\n%s", sub, n, len(pos), gitlabUsage)
		return codes.SystemFailure
	}
	// The driver's own structured log, only where a setting asks for it:
	// by default the job log gets plain sentences alone.
	log, closeLog, err := f.logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "ERROR: tether gitlab %s: %v\n", sub, err)
		return codes.SystemFailure
	}
	defer func() {
		if err := closeLog(); err != nil {
			fmt.Fprintf(stderr, "WARNING: tether gitlab %s: log-file: %v\n", sub, err)
		}
	}()
	log = log.With("command", sub, "job", gitlab.Env(os.Getenv, "CI_JOB_ID"))
	f.log = log
	switch sub {
	case "config":
		return gitlabConfigCmd(&f, stdout, stderr, codes)
	case "prepare":
		return gitlabPrepare(ctx, &f, stdout, codes)
	case "run":
		log = log.With("stage", pos[1])
		return gitlabRun(ctx, &f, pos[0], pos[1], stdout, stderr, log, codes)
	default:
		return gitlabCleanup(ctx, &f, stderr, log, codes)
	}
}

// gitlabConfigCmd prints the JSON config_exec returns to the runner.
func gitlabConfigCmd(cfg *gitlabFlags, stdout, stderr io.Writer, codes gitlab.ExitCodes) int {
	name, err := gitlab.PodName(os.Getenv)
	if err != nil {
		name = ""
	}
	out := map[string]any{
		"builds_dir": cfg.BuildsDir, "cache_dir": cfg.CacheDir, "builds_dir_is_shared": false,
		"hostname": name, "shell": "bash",
		"driver": map[string]string{"name": "tether", "version": version.Get()},
	}
	if err := json.NewEncoder(stdout).Encode(out); err != nil {
		fmt.Fprintf(stderr, "tether gitlab config: %v\n", err)
		return codes.SystemFailure
	}
	return 0
}

// gitlabPod returns the job's pod (its container: the build container),
// a transport maker for a container of it, and the API server's address.
func gitlabPod(cfg *gitlabFlags, log *slog.Logger) (*kube.Pod, func(kube.TransportOptions) client.Transport, string, error) {
	routeKlog(log)
	rc, ns, cs, err := kubeClients(kube.ConfigOptions{Kubeconfig: cfg.Kubeconfig, Context: cfg.Context, Namespace: cfg.Namespace})
	if err != nil {
		return nil, nil, "", err
	}
	name, err := gitlab.PodName(os.Getenv)
	if err != nil {
		return nil, nil, "", err
	}
	pod := &kube.Pod{Client: cs, Namespace: ns, Name: name, Container: kube.BuildContainer, Logger: log}
	return pod, func(o kube.TransportOptions) client.Transport { return pod.Transport(rc, o) }, rc.Host, nil
}
