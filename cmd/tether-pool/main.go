// Command tether-pool is the pools' controller and its status view:
// `tether pool serve` and `tether pool status` run it. It is a program of
// its own so that the tether CLI does not link the controller's packages
// (client-go's informers and leader election, the Prometheus client): Go
// initialises every linked package at each start, and `tether run` is
// latency-bound. tether execs tether-pool from beside itself (then $PATH)
// with the subcommand and its flags unchanged.
//
// Usage:
//
//	tether-pool serve --config FILE [flags]   (as tether pool serve)
//	tether-pool status [flags]                (as tether pool status)
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/tether-ci/tether/internal/cmdutil"
	"github.com/tether-ci/tether/internal/poolcmd"
	"github.com/tether-ci/tether/internal/version"
)

const (
	usage = `Usage:
  tether pool serve --config FILE [flags]   keep the pools' warm pods (the controller)
  tether pool status [flags]                show each pool's pods, claims and misses

This is tether-pool, the program tether runs for these two commands; see
'tether pool --help'.
`
	serveUsage  = "Usage: tether pool serve --config FILE [flags]\n\nKeeps the pools of FILE at their sizes of warm pods (see 'tether pool --help').\n"
	statusUsage = "Usage: tether pool status [flags]\n\nPer pool: its size (with --config), ready (idle) and starting warm pods, pods\nclaimed by running jobs, and the claims and misses (by reason) of the last hour.\n"
)

func main() {
	// SIGTERM (a Deployment's pod stopping) or SIGINT end the controller
	// cleanly: it releases its Lease.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var stderr io.Writer = os.Stderr
	json := cmdutil.JSONLogRequested(os.Args[1:])
	if json {
		// Every stderr line a JSON object, usage errors included, as
		// tether's own with --log-format json.
		stderr = cmdutil.NewJSONLines(os.Stderr)
	}
	code := run(ctx, os.Args[1:], os.Stdout, stderr)
	stop()
	if json {
		stderr.(*cmdutil.JSONLines).Flush()
	}
	os.Exit(code)
}

// run runs the command line args and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return poolcmd.ExitUsage
	}
	var o poolcmd.Options
	switch sub, rest := args[0], args[1:]; sub {
	case "serve":
		if code, ok := parse(poolcmd.NewServeFlagSet(&o), rest, stdout, stderr, sub, serveUsage); !ok {
			return code
		}
		return o.Serve(ctx, stderr)
	case "status":
		if code, ok := parse(poolcmd.NewStatusFlagSet(&o), rest, stdout, stderr, sub, statusUsage); !ok {
			return code
		}
		return o.Status(ctx, stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "tether-pool %s\n", version.Get())
		return 0
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "tether-pool: unknown command %q: want serve or status\nRun 'tether pool --help' for usage.\n", args[0])
	return poolcmd.ExitUsage
}

// parse parses a subcommand's flags; ok false means return code.
func parse(fs *pflag.FlagSet, args []string, stdout, stderr io.Writer, sub, head string) (int, bool) {
	pos, err := cmdutil.ParseArgs(fs, args)
	if errors.Is(err, pflag.ErrHelp) {
		fmt.Fprint(stdout, head+"\nFlags:\n"+fs.FlagUsages())
		return 0, false
	}
	if err == nil && len(pos) > 0 {
		err = fmt.Errorf("unexpected argument %q", pos[0])
	}
	if err != nil {
		fmt.Fprintf(stderr, "tether pool %s: %v\nRun 'tether pool %s --help' for usage.\n", sub, err, sub)
		return poolcmd.ExitUsage, false
	}
	return 0, true
}
