// Command tether runs CI job scripts in a tether-shim — a local child
// process, a Kubernetes pod, or a docker/podman container — and streams
// their output byte-exact.
//
// Layout of this package (one owner per file):
//
//	main.go        subcommand dispatch, usage, version
//	run.go         `tether run`: every run flag (runFlags), validation, backend dispatch
//	run_local.go   runLocal: the local backend (--local)
//	run_kube.go    runKube: the Kubernetes backend (default)
//	run_docker.go  runDocker: the docker/podman backend (--docker)
//	attach.go      attachCmd: `tether attach`
//	gc.go          gcCmd: `tether gc`
//	output.go      shared helpers: logFlags/newLogger, progress events, result summary, exit codes
//	signals.go     shared helpers: signal handling (first signal cancels, second exits)
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/tether-ci/tether/internal/version"
	"github.com/tether-ci/tether/protocol"
)

func main() {
	ctx, stop := signalContext(context.Background(), os.Stderr)
	code := realMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usageText = `tether runs CI job scripts in a tether-shim and streams their output byte-exact.

Usage:
  tether run [flags] SCRIPT...     run a job (local child process, Kubernetes pod or container)
  tether attach [flags] POD        follow a job from a new process (runner restarted)
  tether gc [flags]                delete expired pods and orphaned resources
  tether gitlab config|prepare|run SCRIPT STAGE|cleanup
                                   the GitLab Runner Custom executor driver
  tether version                   print the version
  tether help [COMMAND]            show help

Examples:
  tether run --local build.sh test.sh --after cleanup.sh
  tether run --image alpine:3 -n ci build.sh

Run 'tether help COMMAND' (or 'tether COMMAND --help') for a command's flags.
`

// realMain runs the tether command line args and returns the exit code.
func realMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "run":
		return runCmd(ctx, rest, stdout, stderr)
	case "attach":
		return attachCmd(ctx, rest, stdout, stderr)
	case "gc":
		return gcCmd(ctx, rest, stdout, stderr)
	case "gitlab":
		return gitlabCmd(ctx, rest, stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintf(stdout, "tether %s (protocol %d)\n", version.Version, protocol.Version)
		return 0
	case "help", "--help", "-help", "-h":
		return helpCmd(ctx, rest, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "tether: unknown command %q\n\n%s", cmd, usageText)
		return exitUsage
	}
}

// helpCmd prints the general usage, or a command's usage by running it
// with --help.
func helpCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stdout, usageText)
		return 0
	}
	switch args[0] {
	case "run", "attach", "gc":
		return realMain(ctx, []string{args[0], "--help"}, stdout, stderr)
	case "version", "help":
		fmt.Fprint(stdout, usageText)
		return 0
	}
	fmt.Fprintf(stderr, "tether help: unknown command %q\n\n%s", args[0], usageText)
	return exitUsage
}
