// Command tether runs CI job scripts in a tether-shim — a local child
// process, a Kubernetes pod, or a docker/podman container — and streams
// their output byte-exact.
//
// Layout of this package (one owner per file):
//
//	main.go        dispatch and `tether help` over the command table, program name (kubectl-tether)
//	commands.go    the command table: usage, help, completion and dispatch come from it
//	run.go         runCmd: `tether run`'s help and flags; the run (flags, validation, backends) is internal/runcmd
//	attach.go      attachCmd: `tether attach`
//	gc.go          gcCmd: `tether gc`'s help and flags; the command is internal/gccmd
//	pool.go        poolCmd: `tether pool`'s help and `check`
//	poolexec.go    `tether pool serve|status`: exec tether-pool (cmd/tether-pool), which links the controller
//	gitlab.go      gitlabCmd: `tether gitlab`'s arguments and help; the driver is integration/gitlab
//	actions.go     actionsCmd: `tether actions` (integration/actions)
//	completion.go  completionCmd: `tether completion bash|zsh|fish`
//	output.go      shared helpers: usage with exit codes, JSON stderr lines (a session's progress,
//	               summary and exit code are internal/cmdutil's)
//	signals.go     shared helpers: signal handling (first signal cancels, second exits)
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/internal/cmdutil"
	"github.com/tether-ci/tether/internal/startgc"
)

// startWindow is how long after main begins the garbage collector stays
// off (internal/startgc; its memory limit still bounds the heap): past the
// first output of a job on a warm pod.
const startWindow = time.Second

func main() {
	time.AfterFunc(startWindow, startgc.Restore)
	args := os.Args[1:]
	gitlabDriver := len(args) > 0 && args[0] == "gitlab"
	var stderr io.Writer = os.Stderr
	if !gitlabDriver && cmdutil.JSONLogRequested(args) {
		// Every stderr line a JSON object, written before or after the
		// flags are parsed.
		stderr = cmdutil.NewJSONLines(os.Stderr)
	}
	// The job's output goes to stdout byte-exact; tether's own lines on
	// stderr wait while the output's last line is open, so a terminal (or
	// a log) that shows both never gets one inside a line of the job's.
	stdout := client.NewLineGate(os.Stdout)
	notices := stdout.Notices(stderr)
	signalNotices := notices
	if gitlabDriver {
		// The driver's job log is the runner's: a cancel is said once,
		// after the stage's output (integration/gitlab/run.go).
		signalNotices = io.Discard
	}
	code := func() int {
		ctx, stop := signalContext(withProgName(context.Background(), progName(os.Args[0])), signalNotices)
		defer stop()
		return realMain(ctx, args, stdout, notices)
	}()
	var newline io.Writer
	if sameFile(os.Stdout, os.Stderr) {
		newline = stderr // the output's open line shows where stderr writes next
	}
	_ = stdout.End(newline)
	if j, ok := stderr.(*cmdutil.JSONLines); ok {
		j.Flush()
	}
	os.Exit(code)
}

// sameFile reports whether a and b are the same file: one terminal, or
// one file or pipe both write to (2>&1).
func sameFile(a, b *os.File) bool {
	sa, err := a.Stat()
	if err != nil {
		return false
	}
	sb, err := b.Stat()
	return err == nil && os.SameFile(sa, sb)
}

// realMain runs the tether command line args and returns the exit code.
func realMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, progText(ctx, usageText()+exitCodesHelp))
		return exitUsage
	}
	c := findCommand(args[0])
	if c == nil {
		fmt.Fprintf(stderr, "tether: unknown command %q\n\n%s", args[0], progText(ctx, usageText()))
		return exitUsage
	}
	return c.run(ctx, args[1:], stdout, stderr)
}

// helpCmd prints the general usage, or a command's help (its own, or
// the command run with --help).
func helpCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return generalHelp(ctx, stdout, stderr)
	}
	c := findCommand(args[0])
	switch {
	case c == nil:
		fmt.Fprintf(stderr, "tether help: unknown command %q\n\n%s", args[0], progText(ctx, usageText()))
		return exitUsage
	case c.help != nil:
		return c.help(ctx, stdout, stderr)
	}
	return c.run(ctx, []string{"--help"}, stdout, stderr)
}

// progNameKey carries the program's name in a context.
type progNameKey struct{}

// progName is how the program was invoked: "kubectl tether" when run as
// the kubectl plugin kubectl-tether, else "tether".
func progName(argv0 string) string {
	base := strings.TrimSuffix(filepath.Base(argv0), ".exe")
	if base == "kubectl-tether" {
		return "kubectl tether"
	}
	return "tether"
}

// withProgName returns ctx carrying the program's name for help texts.
func withProgName(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, progNameKey{}, name)
}

// progText rewrites a help text's "tether " to the program's name.
func progText(ctx context.Context, text string) string {
	name, _ := ctx.Value(progNameKey{}).(string)
	if name == "" || name == "tether" {
		return text
	}
	return strings.ReplaceAll(text, "tether ", name+" ")
}
