package main

// Shared CLI helpers for every subcommand (a session's progress, report
// and exit code are internal/cmdutil's):
//
//	printUsage(ctx, fs, w, head)
//	    prints a command's usage with its flags in --name form.

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tether-ci/tether/internal/cmdutil"
)

// exitUsage: bad command line or input (unknown flag, missing script).
const exitUsage = cmdutil.ExitUsage

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
