package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/tether-ci/tether/integration/actions"
	"github.com/tether-ci/tether/internal/cmdutil"
)

const actionsUsage = `Usage: tether actions

The GitHub Actions runner's container hook: the runner (through the
launcher deploy/actions/tether-hook.sh, named by
ACTIONS_RUNNER_CONTAINER_HOOKS) writes one JSON object on stdin; tether
runs its command (prepare_job, run_script_step, run_container_step,
cleanup_job) against Kubernetes and exits 0 on success.

Settings (environment variables):
  TETHER_ACTIONS_NAMESPACE        namespace of the job pods (default
                                  ACTIONS_RUNNER_KUBERNETES_NAMESPACE, else
                                  the kubeconfig's or the service account's)
  TETHER_ACTIONS_KUBECONFIG       kubeconfig file (default the usual chain)
  TETHER_ACTIONS_HELPER_IMAGE     image that carries tether-shim
  TETHER_ACTIONS_PULL_POLICY      Always, IfNotPresent or Never
  TETHER_ACTIONS_JOB_TIMEOUT      job pod's deadline (default 6h)
  TETHER_ACTIONS_IDLE_TIMEOUT     job pod ends after this long without a step
                                  (default 30m; 0 never)
  TETHER_ACTIONS_RECONNECT_TIMEOUT  how long a step may stay unreachable
                                  before it fails as unknown (default 2m)
  TETHER_ACTIONS_SERVICE_ACCOUNT  job pod's service account
  TETHER_ACTIONS_NODE_SELECTOR    key=value,... for the job pod's nodes
  TETHER_ACTIONS_CONFIG           YAML file of tether run's pod settings
                                  (memory, toleration, volume, pod-patch, ...)
  TETHER_ACTIONS_DEBUG            1: diagnostics on stderr
  ACTIONS_RUNNER_POD_NAME         the runner's pod: owner of the job pods
  ACTIONS_RUNNER_PREPARE_JOB_TIMEOUT_SECONDS  bound on the pod's start (600)
  ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE  PodTemplateSpec YAML file merged
                                  into the job pod (wins over the settings
                                  and the workflow's options:)

See docs/actions.md.
`

// actionsCmd is `tether actions`: the GitHub Actions runner container
// hook (integration/actions).
func actionsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
		fmt.Fprint(stdout, progText(ctx, actionsUsage))
		return 0
	}
	if len(args) != 0 {
		fmt.Fprintf(stderr, "tether actions: takes no arguments (the runner's input arrives on stdin)\n\n%s", actionsUsage)
		return exitUsage
	}
	settings, err := actions.SettingsFromEnv(os.Getenv)
	if err != nil {
		// One line per bad variable, each an error line of the step log.
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(stderr, "Error: tether actions: %s\n", line)
		}
		return 1
	}
	level := slog.LevelWarn
	if settings.Debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cmdutil.RouteKlog(log)
	h := &actions.Hook{Settings: settings, Getenv: os.Getenv, Stdout: stdout, Stderr: stderr, Logger: log}
	return actions.Main(ctx, h, os.Stdin)
}
