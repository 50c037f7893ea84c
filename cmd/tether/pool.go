package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/tether-ci/tether/internal/cmdutil"
	"github.com/tether-ci/tether/internal/pool"
)

const poolUsage = `Usage:
  tether pool check FILE                validate a pools file
  tether pool serve --config FILE       keep the pools' warm pods (the controller)
  tether pool status [-n NS]            show each pool's pods, claims and misses

Warm pods are pods of a pool started before their jobs: a job run with
--pool NAME claims one and starts at once, or cold-starts when none fits.
A pools file holds one or more pools, each a map of the keys below (the
long flag names of 'tether run', plus name, size and max-idle):

  pools:
  - name: small
    image: alpine:3
    size: 3          # warm pods to keep ready
    max-idle: 30m    # a warm pod older than this is replaced
    cpu: 500m
    memory: 256Mi

'tether pool check' exits 0 for a valid file and 2 with the first mistake
(file, pool and key) otherwise. 'tether pool serve' runs in the cluster
(deploy/helm/tether-pool): one replica leads (a Lease), keeps every pool at
its size, replaces idle pods whose settings changed or that are older than
max-idle, deletes the idle pods of pools removed from the file, and never
touches a claimed pod. Without it, warm pods end themselves after max-idle
and 'tether gc' removes them.

Pool keys:
`

// poolCmd is `tether pool`: check, serve, status.
func poolCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "--help" || args[0] == "-h" || args[0] == "help" {
		out, code := stdout, 0
		if len(args) == 0 {
			out, code = stderr, exitUsage
		}
		var p pool.Pool
		printUsage(ctx, pool.NewFlagSet(&p), out, poolUsage)
		return code
	}
	switch sub, rest := args[0], args[1:]; sub {
	case "check":
		return poolCheck(ctx, rest, stdout, stderr)
	case "serve", "status":
		// The controller's program (poolexec.go): tether does not link it.
		return execPool(args, stderr)
	}
	fmt.Fprintf(stderr, "tether pool: unknown command %q: want check, serve or status\nRun 'tether pool --help' for usage.\n", args[0])
	return exitUsage
}

// poolCheck is `tether pool check FILE`.
func poolCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cmdutil.NewFlagSet("tether pool check")
	pos, err := cmdutil.ParseArgs(fs, args)
	if errors.Is(err, pflag.ErrHelp) {
		printUsage(ctx, fs, stdout, "Usage: tether pool check FILE\n\nValidates the pools file FILE: exit 0, or 2 with the first mistake.\n")
		return 0
	}
	if err == nil && len(pos) != 1 {
		err = errors.New("want one argument, the pools file")
	}
	if err != nil {
		fmt.Fprintf(stderr, "tether pool check: %v\nRun 'tether pool check --help' for usage.\n", err)
		return exitUsage
	}
	pools, err := pool.Load(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "tether pool check: %v\n", err)
		return exitUsage
	}
	for _, p := range pools {
		fmt.Fprintf(stdout, "pool %s: image %s, size %d, max-idle %s\n", p.Name, p.Image, p.Size, p.MaxIdle)
	}
	return 0
}
