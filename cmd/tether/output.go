package main

// Shared CLI helpers for every subcommand (a session's progress, report
// and exit code are internal/cmdutil's):
//
//	printUsage(ctx, fs, w, head)
//	    prints a command's usage with its flags in --name form.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"github.com/tether-ci/tether/internal/cmdutil"
)

// exitUsage: bad command line or input (unknown flag, missing script).
const exitUsage = cmdutil.ExitUsage

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
