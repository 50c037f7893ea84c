package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/protocol"
)

// Exit codes of tether itself. A job's own exit code is passed through.
const (
	// ExitUsage: bad command line or input (unknown flag, missing script).
	ExitUsage = 2
	// ExitTether: tether failed and the job's outcome is unknown (no
	// result, backend error). 125 like `docker run` and `timeout`.
	ExitTether = 125
	// ExitCancelled: the job was cancelled by a signal and reported no
	// exit code of its own (128+SIGINT).
	ExitCancelled = 130
)

// Progress returns a client.Options.Events callback that logs the
// session's progress: reconnect notices, script starts and the per-script
// summary.
func Progress(log *slog.Logger) func(client.Event) {
	return func(ev client.Event) {
		switch ev.Kind {
		case client.EventConnected:
			if ev.Attempt > 1 {
				log.Warn("reconnected to the shim; output resumes where it stopped", "attempt", ev.Attempt)
			}
		case client.EventDisconnected:
			log.Warn("connection to the shim lost; reconnecting", "attempt", ev.Attempt, "err", ev.Err)
		case client.EventScriptBegin:
			log.Info("script started", "script", ev.Script, "phase", ev.Phase)
		case client.EventScriptStatus:
			attrs := []any{"script", ev.Status.Script, "phase", ev.Status.Phase,
				"exit_code", ev.Status.CommandExitCode,
				"duration", time.Duration(ev.Status.DurationMS) * time.Millisecond}
			if ev.Status.Signal != "" {
				attrs = append(attrs, "signal", ev.Status.Signal)
			}
			if ev.Status.Error != "" {
				attrs = append(attrs, "error", ev.Status.Error)
			}
			if ev.Status.OOMKilled {
				attrs = append(attrs, "killed", OOMText(ev.Status.MemoryLimit))
			}
			if ev.Status.CommandExitCode != 0 {
				log.Warn("script failed", attrs...)
			} else {
				log.Info("script finished", attrs...)
			}
		case client.EventShimError:
			log.Warn("the shim rejected a command", "error", ev.Message)
		case client.EventLogReplay:
			log.Warn("the shim's container ended before the job's result; reading the rest of its output from the container's log", "offset", ev.Offset)
		case client.EventShimExit:
			level := slog.LevelWarn
			if ev.Exit.Reason == protocol.ReasonExitCommand || ev.Exit.Reason == protocol.ReasonStdinEOF {
				level = slog.LevelDebug // the normal end after the job
			}
			log.Log(context.Background(), level, "the shim exited", "reason", ev.Exit.Reason, "exit_code", ev.Exit.ExitCode, "message", ev.Exit.Message)
		}
	}
}

// Report logs the job's outcome: the final summary line, or why there is
// no result.
// extra are more fields for every summary line (jobAttrs).
func Report(log *slog.Logger, res client.Result, err error, extra ...any) {
	if res.OutputDropped > 0 {
		log.Warn("output limit reached: the rest of the job's output was dropped", "dropped_bytes", res.OutputDropped)
	}
	switch {
	case err == nil:
		attrs := []any{"exit_code", res.ExitCode, "scripts", len(res.Statuses)}
		if res.FailedScript != "" {
			attrs = append(attrs, "failed_script", res.FailedScript)
		}
		if res.Reconnects > 0 {
			attrs = append(attrs, "reconnects", res.Reconnects)
		}
		why := failureAttrs(res)
		attrs = append(append(attrs, why...), extra...)
		switch {
		case len(why) > 0:
			// What tether knows and the job's output cannot say (a kill
			// for memory, a script that could not start): an error, shown
			// even with --quiet.
			log.Error("job failed", attrs...)
		case res.ExitCode != 0:
			log.Warn("job failed", attrs...)
		default:
			log.Info("job succeeded", attrs...)
		}
	case res.Cancelled:
		log.Error("job cancelled", append([]any{"exit_code", res.ExitCode, "err", err}, extra...)...)
	case ContainerOOM(err) != nil:
		oom := ContainerOOM(err)
		log.Error("job failed: its container was OOMKilled, the shim with it", append([]any{"exit_code", ExitCode(res, err),
			"killed", OOMText(oom.MemoryLimit), "container", oom.Namespace + "/" + oom.Pod + "/" + oom.Container, "err", err}, extra...)...)
	default:
		log.Error("job failed", append([]any{"exit_code", ExitCode(res, err), "err", err}, extra...)...)
	}
}

// failureAttrs are the summary's fields that say why the failing script
// failed when its own output cannot: killed for memory (killed="out of
// memory (limit 64Mi)"), by another signal, or not started at all (the
// shim's error). None for a script that exited with a code of its own.
func failureAttrs(res client.Result) []any {
	if res.ExitCode == 0 {
		return nil
	}
	var st *protocol.Status
	for i := range res.Statuses {
		if s := &res.Statuses[i]; s.CommandExitCode != 0 && (res.FailedScript == "" || s.Script == res.FailedScript) {
			st = s
			break
		}
	}
	switch {
	case st == nil:
		return nil
	case st.OOMKilled:
		return []any{"killed", OOMText(st.MemoryLimit)}
	case st.Error != "":
		return []any{"error", st.Error}
	case st.Signal != "":
		return []any{"signal", st.Signal}
	}
	return nil
}

// ExitCode maps a session's outcome to tether's exit code: the job's exit
// code when it finished (or was cancelled), the shim's exit code when the
// shim exited first, ExitOOMKilled when the job's container was OOMKilled
// before the job's result came, ExitTether when the outcome is unknown.
func ExitCode(res client.Result, err error) int {
	clamp := func(c int) int {
		if c < 0 || c > 255 {
			return ExitTether
		}
		return c
	}
	switch {
	case err == nil:
		return clamp(res.ExitCode)
	case res.Cancelled:
		if res.ExitCode != 0 {
			return clamp(res.ExitCode)
		}
		return ExitCancelled
	case errors.Is(err, client.ErrShimExited) && res.ExitCode != 0:
		return clamp(res.ExitCode)
	case ContainerOOM(err) != nil:
		return ExitOOMKilled
	case errors.Is(err, context.Canceled):
		return ExitCancelled
	}
	return ExitTether
}

// CancelledCode says how a cancelled job's script ended, if it reported
// (res from client.Run after a cancel): ": its script was stopped and
// ended with exit code N", or "".
func CancelledCode(res client.Result) string {
	if len(res.Statuses) == 0 {
		return ""
	}
	return fmt.Sprintf(": its script was stopped and ended with exit code %d", res.ExitCode)
}
