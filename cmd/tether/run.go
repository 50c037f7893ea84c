package main

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/tether-ci/tether/internal/cmdutil"
	"github.com/tether-ci/tether/internal/runcmd"
)

const runUsage = `Usage: tether run [flags] SCRIPT... [--after SCRIPT]...

Runs the scripts as one CI job: the main scripts in order until one fails,
then the after-scripts always. The scripts' output (stdout and stderr) goes to
stdout byte-exact; progress, the per-script summary and reconnect notices go to
stderr, never inside a line of the job's output where both show on one screen. tether exits with the job's exit code (the first failing main script's),
2 on bad input, 125 when the job's outcome is unknown.

Backends: --local (tether-shim as a child process), --docker (a docker/podman
container), otherwise a Kubernetes pod (--image required).

In a namespace that enforces the Pod Security Standard "restricted"
(label pod-security.kubernetes.io/enforce=restricted) add --restricted: the
build container then runs as user 65532 (--run-as-user picks another) with
no capabilities, no privilege escalation, the RuntimeDefault seccomp profile
and a read-only root filesystem (/tmp and /tether stay writable;
--read-only-root=false keeps the root writable).

Examples:
  tether run --local build.sh test.sh --after cleanup.sh
  tether run --image alpine:3 -n ci --timeout 30m build.sh
  tether run --image alpine:3 -n ci --restricted build.sh
  tether run --config tether.yaml build.sh   # lines such as "image: alpine:3", "env: [A=1, B=2]"
`

// runCmd is `tether run`: its flags and help; the run is internal/runcmd's.
func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := runcmd.Flags{Start: time.Now()}
	fs := runcmd.NewFlagSet(&f)
	pos, err := cmdutil.ParseArgs(fs, args)
	if errors.Is(err, pflag.ErrHelp) {
		printUsage(ctx, fs, stdout, runUsage)
		return 0
	}
	if err != nil {
		return runcmd.UsageErr(stderr, "%v", err)
	}
	if err := f.Pod.Complete(fs); err != nil {
		return runcmd.UsageErr(stderr, "%v", err)
	}
	if err := f.Validate(pos); err != nil {
		return runcmd.UsageErr(stderr, "%v", err)
	}
	log, err := f.LogFlags.Logger(stderr)
	if err != nil {
		return runcmd.UsageErr(stderr, "%v", err)
	}
	f.Logger = log
	return f.Run(ctx, stdout, stderr)
}
