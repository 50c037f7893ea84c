// Command tether runs CI job scripts in a tether-shim — a local child
// process, a Kubernetes pod, or a docker/podman container — and streams
// their output byte-exact.
//
// Layout of this package (one owner per file):
//
//	main.go        subcommand dispatch, usage, version, program name (kubectl-tether)
//	run.go         runCmd: `tether run`'s help and flags; the run (flags, validation, backends) is internal/runcmd
//	attach.go      attachCmd: `tether attach`
//	gc.go          gcCmd: `tether gc`'s help and flags; the command is internal/gccmd
//	pool.go        poolCmd: `tether pool check|serve|status`'s help; the commands are internal/poolcmd
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

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/internal/version"
	"github.com/tether-ci/tether/protocol"
)

func main() {
	args := os.Args[1:]
	gitlabDriver := len(args) > 0 && args[0] == "gitlab"
	var stderr io.Writer = os.Stderr
	if !gitlabDriver && jsonLogRequested(args) {
		// Every stderr line a JSON object, written before or after the
		// flags are parsed.
		stderr = newJSONLines(os.Stderr)
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
	if j, ok := stderr.(*jsonLines); ok {
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

const usageText = `tether runs CI job scripts in a tether-shim and streams their output byte-exact.

Usage:
  tether run [flags] SCRIPT...     run a job (local child process, Kubernetes pod or container)
  tether attach [flags] POD        follow a job from a new process (runner restarted)
  tether gc [flags]                delete expired pods and orphaned resources
  tether pool check|serve|status   warm pods: validate a pools file, keep the pools, show them
  tether gitlab config|prepare|run SCRIPT STAGE|cleanup
                                   the GitLab Runner Custom executor driver
  tether actions                   the GitHub Actions runner container hook
  tether completion bash|zsh|fish  print a shell completion script
  tether version                   print the version
  tether help [COMMAND]            show help

Examples:
  tether run --local build.sh test.sh --after cleanup.sh
  tether run --image alpine:3 -n ci build.sh

Run 'tether help COMMAND' (or 'tether COMMAND --help') for a command's flags.
Installed as kubectl-tether on PATH, tether is the kubectl plugin 'kubectl tether'.
`

// realMain runs the tether command line args and returns the exit code.
func realMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, progText(ctx, usageText+exitCodesHelp))
		return exitUsage
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "run":
		return runCmd(ctx, rest, stdout, stderr)
	case "attach":
		return attachCmd(ctx, rest, stdout, stderr)
	case "gc":
		return gcCmd(ctx, rest, stdout, stderr)
	case "pool":
		return poolCmd(ctx, rest, stdout, stderr)
	case "gitlab":
		return gitlabCmd(ctx, rest, stdout, stderr)
	case "actions":
		return actionsCmd(ctx, rest, stdout, stderr)
	case "completion":
		return completionCmd(ctx, rest, stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintf(stdout, "tether %s (protocol %d)\n", version.Get(), protocol.Version)
		return 0
	case "help", "--help", "-help", "-h":
		return helpCmd(ctx, rest, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "tether: unknown command %q\n\n%s", cmd, progText(ctx, usageText))
		return exitUsage
	}
}

// helpCmd prints the general usage, or a command's usage by running it
// with --help.
func helpCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stdout, progText(ctx, usageText+exitCodesHelp))
		return 0
	}
	switch args[0] {
	case "run", "attach", "gc", "actions", "pool":
		return realMain(ctx, []string{args[0], "--help"}, stdout, stderr)
	case "completion":
		return completionCmd(ctx, []string{"--help"}, stdout, stderr)
	case "version", "help":
		fmt.Fprint(stdout, progText(ctx, usageText+exitCodesHelp))
		return 0
	}
	fmt.Fprintf(stderr, "tether help: unknown command %q\n\n%s", args[0], progText(ctx, usageText))
	return exitUsage
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
