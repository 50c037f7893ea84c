package main

// Shared CLI helpers for every subcommand and backend:
//
//	logFlags / (*logFlags).register / (*logFlags).logger
//	    --quiet and --log-format on a FlagSet, and the slog.Logger they select.
//	progress(log)
//	    a client.Options.Events callback that logs reconnects, script starts
//	    and the per-script summary (name, exit code, duration).
//	report(log, res, err)
//	    logs the job's final summary or why there is no result.
//	exitCode(res, err)
//	    maps a session's outcome to tether's exit code.
//	parseArgs(fs, args)
//	    parses flags and positional arguments in any order.
//	printUsage(ctx, fs, w, head)
//	    prints a command's usage with its flags in --name form.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/tether-ci/tether/client"
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

// logFlags are the logging flags every subcommand shares.
type logFlags struct {
	// Quiet silences progress; only errors are logged.
	Quiet bool
	// Verbose adds debug lines, client-go's included.
	Verbose bool
	// Format is "text" or "json".
	Format string
}

// register adds -q/--quiet, -v/--verbose and --log-format to fs.
func (l *logFlags) register(fs *pflag.FlagSet) {
	fs.BoolVarP(&l.Quiet, "quiet", "q", false, "log only errors to stderr (no progress, no summary)")
	fs.BoolVarP(&l.Verbose, "verbose", "v", false, "also log debug lines to stderr, client-go's requests and retries included")
	fs.StringVar(&l.Format, "log-format", "text", "stderr log `FORMAT`: text or json")
}

// logger returns the logger the flags select, writing to w.
func (l *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	level := slog.LevelInfo
	switch {
	case l.Quiet && l.Verbose:
		return nil, errors.New("--quiet and --verbose exclude each other")
	case l.Quiet:
		level = slog.LevelError
	case l.Verbose:
		level = slog.LevelDebug
		// client-go logs its requests and retries at klog V(4..6); routeKlog
		// sends them to this logger's debug level.
		kfs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(kfs)
		if err := kfs.Set("v", "6"); err != nil {
			return nil, fmt.Errorf("raise client-go's log verbosity: %w", err)
		}
	}
	opts := &slog.HandlerOptions{Level: level}
	switch l.Format {
	case "text", "":
		// A short local time: the lines sit between the job's output.
		opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 && a.Value.Kind() == slog.KindTime {
				a.Value = slog.StringValue(a.Value.Time().Format("15:04:05.000"))
			}
			return a
		}
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", l.Format)
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
				attrs = append(attrs, "killed", oomText(ev.Status.MemoryLimit))
			}
			if ev.Status.CommandExitCode != 0 {
				log.Warn("script failed", attrs...)
			} else {
				log.Info("script finished", attrs...)
			}
		case client.EventShimError:
			log.Warn("the shim rejected a command", "error", ev.Message)
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
func report(log *slog.Logger, res client.Result, err error) {
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
		if res.ExitCode != 0 {
			log.Warn("job failed", attrs...)
		} else {
			log.Info("job succeeded", attrs...)
		}
	case res.Cancelled:
		log.Error("job cancelled", "exit_code", res.ExitCode, "err", err)
	default:
		log.Error("job failed", "exit_code", exitCode(res, err), "err", err)
	}
}

// exitCode maps a session's outcome to tether's exit code: the job's exit
// code when it finished (or was cancelled), the shim's exit code when the
// shim exited first, exitTether when the outcome is unknown.
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
	case errors.Is(err, context.Canceled):
		return exitCancelled
	}
	return exitTether
}

// newFlagSet returns an empty FlagSet for a subcommand: errors are
// returned, never printed; --help is the caller's to print.
func newFlagSet(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.SortFlags = true
	return fs
}

// boolValue is a custom flag value that may stand alone ("--flag" means
// "--flag=true").
type boolValue interface{ IsBoolFlag() bool }

// markBoolValues lets fs's custom boolValue flags stand alone.
func markBoolValues(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if b, ok := f.Value.(boolValue); ok && b.IsBoolFlag() && f.NoOptDefVal == "" {
			f.NoOptDefVal = "true"
		}
	})
}

// parseArgs parses fs's flags from args, flags and positional arguments in
// any order ("run a.sh --after b.sh"); "--" ends the flags. It returns the
// positional arguments.
func parseArgs(fs *pflag.FlagSet, args []string) ([]string, error) {
	markBoolValues(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return fs.Args(), nil
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

// Type names the value in the help text.
func (s *stringList) Type() string { return "VALUE" }

// Set appends v.
func (s *stringList) Set(v string) error {
	*s = append(*s, v)
	return nil
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
