package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/tether-ci/tether/integration/gitlab"
)

const gitlabUsage = `Usage: tether gitlab config|prepare|run SCRIPT STAGE|cleanup|agent [--config FILE]

The GitLab Runner Custom executor driver: GitLab Runner calls these four
commands for every job (see docs/gitlab.md for the config.toml snippet).
  config    print the driver's JSON (builds_dir, hostname, shell, ...)
  prepare   create the job's pod and wait until it runs (its events go to the job log)
  run       deliver the stage script over the attach stream, run it, stream its output
  cleanup   delete the job's pod (idempotent) and stop the job's stage agent
  agent     the job's stage agent, which prepare starts (stage-agent): it
            keeps the Kubernetes connection and runs the stages tether-stage
            (run_exec) sends it, until cleanup

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

// gitlabCmd is `tether gitlab`: its arguments and help; the commands
// are integration/gitlab's.
func gitlabCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "--help" || args[0] == "-h" || args[0] == "help" {
		fmt.Fprint(stdout, gitlabUsage)
		if len(args) > 1 && args[1] == "flags" {
			fmt.Fprintf(stdout, "\nFlags (and config file keys):\n%s", gitlab.NewFlagSet(&gitlab.Settings{}).FlagUsages())
		}
		if len(args) == 0 {
			return exitUsage
		}
		return 0
	}
	sub := args[0]
	n, ok := gitlab.CommandArgs(sub)
	if !ok {
		fmt.Fprintf(stderr, "tether gitlab: unknown command %q\n\n%s", sub, gitlabUsage)
		return gitlab.SystemFailure(os.Getenv)
	}
	var f gitlab.Settings
	pos, err := gitlab.Parse(&f, args[1:], os.Getenv)
	if errors.Is(err, pflag.ErrHelp) {
		fmt.Fprintf(stdout, "%s\nFlags (and config file keys):\n%s", gitlabUsage, gitlab.NewFlagSet(&gitlab.Settings{}).FlagUsages())
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "tether gitlab %s: %v\n", sub, err)
		return gitlab.SystemFailure(os.Getenv)
	}
	if len(pos) != n {
		fmt.Fprintf(stderr, "tether gitlab %s: want %d arguments, got %d\n\n%s", sub, n, len(pos), gitlabUsage)
		return gitlab.SystemFailure(os.Getenv)
	}
	if sub == "prepare" {
		// prepare starts the job's stage agent: this binary, with
		// prepare's settings.
		if exe, err := os.Executable(); err == nil {
			f.AgentCommand = append([]string{exe, "gitlab", "agent"}, args[1:]...)
		}
	}
	return gitlab.Command(ctx, &f, os.Getenv, sub, pos, stdout, stderr)
}
