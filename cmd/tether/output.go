package main

// Shared CLI helpers for every subcommand and backend:
//
//	progress(log)
//	    a client.Options.Events callback that logs reconnects, script starts
//	    and the per-script summary (name, exit code, duration).
//	report(log, res, err)
//	    logs the job's final summary or why there is no result.
//	exitCode(res, err)
//	    maps a session's outcome to tether's exit code.
//	printUsage(ctx, fs, w, head)
//	    prints a command's usage with its flags in --name form.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/internal/cmdutil"
	"github.com/tether-ci/tether/protocol"
)

// Exit codes of tether itself. A job's own exit code is passed through.
const (
	// exitUsage: bad command line or input (unknown flag, missing script).
	exitUsage = 2
	// exitTether: tether failed and the job's outcome is unknown (no
	// result, backend error). 125 like `docker run` and `timeout`.
	exitTether = 125
	// exitCancelled: the job was cancelled by a signal and reported no
	// exit code of its own (128+SIGINT).
	exitCancelled = 130
)

// jsonLogRequested reports whether args ask for --log-format json, so
// that messages written before the flags are parsed (signal notices) are
// JSON too.
func jsonLogRequested(args []string) bool {
	for i, a := range args {
		if a == "--" {
			return false
		}
		if a == "--log-format=json" || a == "--log-format" && i+1 < len(args) && args[i+1] == "json" {
			return true
		}
	}
	return false
}

// lineLogger is an io.Writer that logs each line written to it as one
// record, so a child's diagnostics (the local shim's stderr) stay JSON
// lines under --log-format json.
type lineLogger struct {
	log     *slog.Logger
	source  string
	pending []byte
}

// Write logs every complete line of p; a partial line waits for the rest.
func (l *lineLogger) Write(p []byte) (int, error) {
	l.pending = append(l.pending, p...)
	for {
		i := bytes.IndexByte(l.pending, '\n')
		if i < 0 {
			return len(p), nil
		}
		if line := strings.TrimRight(string(l.pending[:i]), "\r"); line != "" {
			l.log.Warn(line, "source", l.source)
		}
		l.pending = l.pending[i+1:]
	}
}

// jsonLines is the stderr of a `--log-format json` run: lines that are
// JSON objects pass through, any other line (a usage error, a signal
// notice, a library's direct write) becomes a JSON log record, so every
// stderr line parses as JSON.
type jsonLines struct {
	mu      sync.Mutex
	w       io.Writer
	log     *slog.Logger // JSON records straight to w
	pending []byte
}

// newJSONLines returns a jsonLines writing to w.
func newJSONLines(w io.Writer) *jsonLines {
	return &jsonLines{w: w, log: slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{ReplaceAttr: cmdutil.JSONAttr}))}
}

// Write passes complete JSON lines through and wraps the others.
func (j *jsonLines) Write(p []byte) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.pending = append(j.pending, p...)
	for {
		i := bytes.IndexByte(j.pending, '\n')
		if i < 0 {
			return len(p), nil
		}
		j.line(j.pending[:i+1])
		j.pending = j.pending[i+1:]
	}
}

// line writes one line (with its newline), as it is when it is a JSON
// object, else wrapped.
func (j *jsonLines) line(b []byte) {
	t := bytes.TrimSpace(b)
	switch {
	case len(t) == 0:
	case t[0] == '{' && json.Valid(t):
		_, _ = j.w.Write(append(t, '\n'))
	default:
		j.log.Warn(string(t), "source", "tether")
	}
}

// Flush writes a last unterminated line.
func (j *jsonLines) Flush() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.pending) > 0 {
		j.line(j.pending)
		j.pending = nil
	}
}

// progress returns a client.Options.Events callback that logs the
// session's progress: reconnect notices, script starts and the per-script
// summary.
func progress(log *slog.Logger) func(client.Event) {
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
				attrs = append(attrs, "killed", cmdutil.OOMText(ev.Status.MemoryLimit))
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

// report logs the job's outcome: the final summary line, or why there is
// no result.
// extra are more fields for every summary line (jobAttrs).
func report(log *slog.Logger, res client.Result, err error, extra ...any) {
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
	case cmdutil.ContainerOOM(err) != nil:
		oom := cmdutil.ContainerOOM(err)
		log.Error("job failed: its container was OOMKilled, the shim with it", append([]any{"exit_code", exitCode(res, err),
			"killed", cmdutil.OOMText(oom.MemoryLimit), "container", oom.Namespace + "/" + oom.Pod + "/" + oom.Container, "err", err}, extra...)...)
	default:
		log.Error("job failed", append([]any{"exit_code", exitCode(res, err), "err", err}, extra...)...)
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
		return []any{"killed", cmdutil.OOMText(st.MemoryLimit)}
	case st.Error != "":
		return []any{"error", st.Error}
	case st.Signal != "":
		return []any{"signal", st.Signal}
	}
	return nil
}

// exitCode maps a session's outcome to tether's exit code: the job's exit
// code when it finished (or was cancelled), the shim's exit code when the
// shim exited first, cmdutil.ExitOOMKilled when the job's container was OOMKilled
// before the job's result came, exitTether when the outcome is unknown.
func exitCode(res client.Result, err error) int {
	clamp := func(c int) int {
		if c < 0 || c > 255 {
			return exitTether
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
		return exitCancelled
	case errors.Is(err, client.ErrShimExited) && res.ExitCode != 0:
		return clamp(res.ExitCode)
	case cmdutil.ContainerOOM(err) != nil:
		return cmdutil.ExitOOMKilled
	case errors.Is(err, context.Canceled):
		return exitCancelled
	}
	return exitTether
}

// exitCodesHelp lists tether's exit codes for every command's --help.
const exitCodesHelp = `
Exit codes:
  0        the job succeeded
  1-123    the job's own exit code (the first failing main script's)
  2        bad input: unknown flag, bad value, missing script
  124      the job's --timeout (deadline) or the pod's TTL expired
  125      the job's outcome is unknown (tether or the backend failed), or
           the shim exited idle
  126, 127 the job's own codes: a script or its interpreter is not executable
           or not found
  130, 143 cancelled by SIGINT or SIGTERM before the job reported a code;
           a second signal exits at once with 128+N
  137      a script was killed (SIGKILL), or the job's whole container was
           OOMKilled; the log's killed="out of memory (limit …)" says when
           memory was the cause
`

// printUsage prints head, fs's flags and the exit codes to w, naming the
// program as it was invoked (progName).
func printUsage(ctx context.Context, fs *pflag.FlagSet, out io.Writer, head string) {
	w := &strings.Builder{}
	defer func() { fmt.Fprint(out, progText(ctx, w.String())) }()
	fmt.Fprint(w, head)
	fmt.Fprintln(w, "\nFlags:")
	fs.VisitAll(func(f *pflag.Flag) {
		name, usage := pflag.UnquoteUsage(f)
		line := "  "
		if f.Shorthand != "" {
			line += "-" + f.Shorthand + ", "
		}
		line += "--" + f.Name
		if name != "" && f.NoOptDefVal == "" {
			line += " " + name
		}
		line += "\n        " + usage
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0s" && f.DefValue != "[]" && f.DefValue != "0" {
			line += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintln(w, line)
	})
	fmt.Fprint(w, exitCodesHelp)
}
