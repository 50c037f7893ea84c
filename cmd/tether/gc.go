package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/tether-ci/tether/internal/cmdutil"
	"github.com/tether-ci/tether/internal/gc"
	"github.com/tether-ci/tether/internal/gccmd"
)

const gcUsage = `Usage: tether gc [flags]

Deletes, in the given namespaces only:
  - pods annotated ` + gc.TTLAnnotation + `: "SECONDS" whose creation time + SECONDS
    has passed, in any phase (a malformed value is reported and the pod skipped);
    pods without it but with GitLab's pod cleaner annotation
    ` + gc.GitLabTTLAnnotation + `: "DURATION" (e.g. "1h30m") likewise;
  - Tether's pods (labelled ` + gc.ManagedByLabel + `=` + gc.ManagedByValue + `) that have ended
    (phase Succeeded or Failed) once they are older than --grace, whatever
    their TTL (--grace 0s: at once);
  - ConfigMaps and Secrets labelled ` + gc.ManagedByLabel + `=` + gc.ManagedByValue + ` whose owner pod
    is gone (missing or recreated with another UID), or that have no owner at all,
    once they are older than --grace.
Every delete carries a UID precondition: an object recreated under the same name
is never deleted. One line per action and a summary go to stdout.

Exit status: 0 success, 1 a list or delete failed, 2 bad usage.

Examples:
  tether gc -n ci --dry-run
  tether gc --all-namespaces --log-format json
  tether gc -n ci -n ci-large --grace 30m -l tether.dev/runner=r1
`

// gcCmd is `tether gc`: its flags and help; the cleaning is internal/gccmd's.
func gcCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f gccmd.Options
	fs := gccmd.NewFlagSet(&f)
	pos, err := cmdutil.ParseArgs(fs, args)
	if errors.Is(err, pflag.ErrHelp) {
		printUsage(ctx, fs, stdout, gcUsage)
		return 0
	}
	if err == nil && len(pos) > 0 {
		err = fmt.Errorf("unexpected argument %q", pos[0])
	}
	if err == nil {
		err = f.Validate()
	}
	if err != nil {
		fmt.Fprintf(stderr, "tether gc: %v\nRun 'tether gc --help' for usage.\n", err)
		return exitUsage
	}
	return f.Run(ctx, stdout, stderr)
}
