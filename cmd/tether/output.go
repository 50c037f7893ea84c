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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
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
	// fullTime keeps the date in text records (a log file), where the
	// terminal's records show the time of day alone.
	fullTime bool
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
		if l.fullTime {
			return slog.New(slog.NewTextHandler(w, opts)), nil
		}
		// A short local time: the lines sit between the job's output.
		opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 && a.Value.Kind() == slog.KindTime {
				a.Value = slog.StringValue(a.Value.Time().Format("15:04:05.000"))
			}
			return a
		}
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		opts.ReplaceAttr = jsonAttr
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", l.Format)
}

// jsonAttr renders durations as numbers of seconds in JSON logs (the text
// format shows them as Go durations, e.g. 1.5s).
func jsonAttr(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.Float64Value(a.Value.Duration().Seconds())
	}
	return a
}

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
	return &jsonLines{w: w, log: slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{ReplaceAttr: jsonAttr}))}
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
				attrs = append(attrs, "killed", oomText(ev.Status.MemoryLimit))
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
	case containerOOM(err) != nil:
		oom := containerOOM(err)
		log.Error("job failed: its container was OOMKilled, the shim with it", append([]any{"exit_code", exitCode(res, err),
			"killed", oomText(oom.MemoryLimit), "container", oom.Namespace + "/" + oom.Pod + "/" + oom.Container, "err", err}, extra...)...)
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
		return []any{"killed", oomText(st.MemoryLimit)}
	case st.Error != "":
		return []any{"error", st.Error}
	case st.Signal != "":
		return []any{"signal", st.Signal}
	}
	return nil
}

// exitCode maps a session's outcome to tether's exit code: the job's exit
// code when it finished (or was cancelled), the shim's exit code when the
// shim exited first, exitOOMKilled when the job's container was OOMKilled
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
	case containerOOM(err) != nil:
		return exitOOMKilled
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
