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
` + "%s" + `
See docs/actions.md.
`

// actionsHelp is `tether actions --help`: the settings from the hook's
// table (actions.SettingsTable).
func actionsHelp() string { return fmt.Sprintf(actionsUsage, actions.SettingsHelp()) }

// actionsCmd is `tether actions`: the GitHub Actions runner container
// hook (integration/actions).
func actionsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
		fmt.Fprint(stdout, progText(ctx, actionsHelp()))
		return 0
	}
	if len(args) != 0 {
		fmt.Fprintf(stderr, "tether actions: takes no arguments (the runner's input arrives on stdin)\n\n%s", actionsHelp())
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
