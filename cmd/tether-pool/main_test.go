package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tether-ci/tether/internal/poolcmd"
)

// tether-pool answers the command lines tether passes on: serve and
// status with their flags; anything else is a usage error.
func TestRun(t *testing.T) {
	for _, c := range []struct {
		args         []string
		code         int
		stdout, errs string
	}{
		{nil, poolcmd.ExitUsage, "", "tether pool serve --config FILE"},
		{[]string{"serve", "--help"}, 0, "--lease-name", ""},
		{[]string{"status", "--help"}, 0, "claimed by running jobs", ""},
		{[]string{"serve"}, poolcmd.ExitUsage, "", "--config FILE is required"},
		{[]string{"serve", "extra"}, poolcmd.ExitUsage, "", `unexpected argument "extra"`},
		{[]string{"check", "x.yaml"}, poolcmd.ExitUsage, "", `unknown command "check"`},
		{[]string{"version"}, 0, "tether-pool ", ""},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), c.args, &stdout, &stderr)
		if code != c.code || !strings.Contains(stdout.String(), c.stdout) || !strings.Contains(stderr.String(), c.errs) {
			t.Errorf("%v: exit %d stdout %q stderr %q, want %d, %q and %q", c.args, code, stdout.String(), stderr.String(), c.code, c.stdout, c.errs)
		}
	}
}
