//go:build e2e

package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/internal/testing/actionsrunner"
)

// bothStreamsScript writes to stdout and stderr alike: lines in turn,
// binary bytes, a line longer than a record on stderr, bulk output on
// stdout (block records), partial lines, and a last line without a newline
// on each. bothStreamsWant is what each stream holds.
const bothStreamsScript = `echo out one
echo err one >&2
printf '\000\377\376bin\r\n' >&2
printf 'err partial-' >&2
sleep 1
printf 'rest\n' >&2
head -c 40000 /dev/zero | tr '\000' E >&2
echo >&2
head -c 3000000 /dev/zero | tr '\000' O
echo
echo out two
printf 'out no newline'
printf 'err no newline' >&2
`

func bothStreamsWant() (stdout, stderr string) {
	return "out one\n" + strings.Repeat("O", 3000000) + "\nout two\nout no newline",
		"err one\n\x00\xff\xfebin\r\nerr partial-rest\n" + strings.Repeat("E", 40000) + "\nerr no newline"
}

// TestKubeRunStderrSeparate: `tether run --stderr separate` on the node
// writes the job's stdout to stdout and its stderr to stderr, each byte
// for byte; without the flag both arrive on stdout.
func TestKubeRunStderrSeparate(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "stderr-run")
	paths := writeScripts(t, []string{"both.sh"}, map[string]string{"both.sh": bothStreamsScript})
	wantOut, wantErr := bothStreamsWant()
	res := runCLI(ctx, t, c, bin, "run", "-q", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns,
		"--stderr", "separate", paths[0])
	if res.code != 0 || res.stdout != wantOut || res.stderr != wantErr {
		t.Fatalf("--stderr separate: exit %d, stdout %d bytes (want %d, equal %v), stderr %q (want %d bytes)",
			res.code, len(res.stdout), len(wantOut), res.stdout == wantOut, clipString(res.stderr), len(wantErr))
	}
	res = runCLI(ctx, t, c, bin, "run", "-q", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns, paths[0])
	if res.code != 0 || res.stderr != "" || len(res.stdout) != len(wantOut)+len(wantErr) || !strings.HasPrefix(res.stdout, "out one\nerr one\n") {
		t.Fatalf("merged: exit %d, stdout %d bytes (want %d) starting %q, stderr %q", res.code, len(res.stdout), len(wantOut)+len(wantErr), clipString(res.stdout), res.stderr)
	}
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}

// TestActionsStepStderr: a script step's and a container step's stderr
// reach the hook's stderr and their stdout its stdout, each exactly as the
// step wrote it, and the runner's step log holds the lines of both.
func TestActionsStepStderr(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "actions-stderr")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	r := newActionsRunner(t, c, ns)
	if res, err := r.PrepareJob(ctx, BashImage, nil, nil); err != nil || res.ExitCode != 0 {
		t.Fatalf("prepare_job: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
	}
	wantOut, wantErr := bothStreamsWant()
	check := func(what string, res actionsrunner.Result) {
		t.Helper()
		if res.ExitCode != 0 || string(res.Stdout) != wantOut || string(res.Stderr) != wantErr {
			t.Fatalf("%s: exit %d, stdout %d bytes (want %d, equal %v), stderr %q (want %d bytes)",
				what, res.ExitCode, len(res.Stdout), len(wantOut), string(res.Stdout) == wantOut, clipString(string(res.Stderr)), len(wantErr))
		}
		for _, line := range []string{"out one", "err one", "err partial-rest", "out two", "out no newline", "err no newline"} {
			if !slices.Contains(res.Log, line) {
				t.Errorf("%s: the step log lacks %q", what, line)
			}
		}
	}
	check("script step", mustStep(ctx, t, r, actionsrunner.Step{Script: bothStreamsScript}))

	mustStep(ctx, t, r, actionsrunner.Step{Script: "cat > both.sh <<'EOF'\n" + bothStreamsScript + "EOF\n"})
	res, err := r.RunContainer(ctx, actionsrunner.ContainerStep{Image: BusyboxImage, EntryPoint: "sh", Args: []string{"./both.sh"}})
	if err != nil {
		t.Fatalf("run_container_step: %v\nstderr %s", err, clipString(string(res.Stderr)))
	}
	check("container step", res)
	cleanupLeavesNothing(ctx, t, c, ns, r)
}

// clipString shortens s for a message.
func clipString(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}
