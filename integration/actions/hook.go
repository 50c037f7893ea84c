package actions

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/tether-ci/tether/integration/actions/hookapi"
)

// Hook is what every command runs with: the settings, the hook's
// environment (the runner's), its output streams (the step's log) and a
// logger for diagnostics.
type Hook struct {
	Settings Settings
	// Getenv reads the hook's environment (os.Getenv).
	Getenv func(string) string
	// Stdout and Stderr are the step's log in the runner.
	Stdout, Stderr io.Writer
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Connect makes the commands' API server connection; nil loads the
	// kubeconfig the settings name. Unit tests pass client-go's fake
	// clientset here.
	Connect Connector
}

func (h *Hook) logger() *slog.Logger {
	if h.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Logger
}

// warn writes a warning line to stderr.
func (h *Hook) warn(format string, args ...any) {
	fmt.Fprintf(h.Stderr, "Warning: tether actions: "+format+"\n", args...)
}

// warnReconnects says, when the connection to the job's pod st broke
// while a step ran, that nothing of its output was lost.
func (h *Hook) warnReconnects(st *hookapi.State, reconnects int) {
	if reconnects > 0 {
		h.warn("the connection to the job's pod %s/%s broke %d times while the step ran; the step ran on and its output resumed where it stopped, nothing lost or repeated",
			st.Namespace, st.Pod, reconnects)
	}
}

// Main reads the runner's input from stdin, runs its command and returns
// the hook's exit code: 0 for success, else non-zero with the reason on
// stderr.
func Main(ctx context.Context, h *Hook, stdin io.Reader) int {
	in, err := hookapi.ReadInput(stdin)
	if err != nil {
		return h.exitCode(err)
	}
	switch in.Command {
	case hookapi.CommandPrepareJob:
		return PrepareJob(ctx, h, in)
	case hookapi.CommandRunScriptStep:
		return RunScriptStep(ctx, h, in)
	case hookapi.CommandRunContainerStep:
		return RunContainerStep(ctx, h, in)
	default: // hookapi.CommandCleanupJob; hookapi.ReadInput refused the rest
		return CleanupJob(ctx, h, in)
	}
}
