//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/tether-ci/tether/integration/actions"
	"github.com/tether-ci/tether/internal/testing/actionsrunner"
)

// bulkLines is how many numbered lines the bulk container step prints:
// about 19 MB, far past the kubelet's 10 MiB log rotation.
const bulkLines = 2_500_000

// bulkStep prints the numbers 1..bulkLines in 50 bursts 0.2 s apart and
// exits 5.
var bulkStep = actionsrunner.ContainerStep{Image: BusyboxImage, EntryPoint: "sh", Args: []string{"-c",
	fmt.Sprintf(`n=%d; b=0; while [ $b -lt 50 ]; do seq $((b*n/50+1)) $(((b+1)*n/50)); b=$((b+1)); sleep 0.2; done; exit 5`, bulkLines)}}

// TestActionsContainerStepBulk runs a container step that prints 2.5
// million numbered lines (19 MB) in bursts, with no cut and with every API
// connection of the hook cut three times: the hook's stdout and the
// runner's step log hold every line once, in order, and the exit code is
// the step's 5.
func TestActionsContainerStepBulk(t *testing.T) {
	c := NewCluster(t)
	for _, cuts := range []int{0, 3} {
		t.Run(fmt.Sprintf("cuts=%d", cuts), func(t *testing.T) {
			ns := c.NewNamespace(t, fmt.Sprintf("actions-bulk-%d", cuts))
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
			defer cancel()
			var env []string
			var cutsDone <-chan int
			out := &safeBuffer{}
			if cuts > 0 {
				kubeconfig, proxy := proxiedKubeconfig(t, c)
				env = append(env, actions.EnvKubeconfig+"="+kubeconfig)
				cutsDone = cutRepeatedly(ctx, proxy, func() bool { return out.Len() > 0 }, cuts, time.Second)
			}
			r := newActionsRunner(t, c, ns, env...)
			if res, err := r.PrepareJob(ctx, BashImage, nil, nil); err != nil || res.ExitCode != 0 {
				t.Fatalf("prepare_job: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
			}
			r.Tee = out
			res, err := r.RunContainer(ctx, bulkStep)
			r.Tee = nil
			if err != nil {
				t.Fatalf("run_container_step: %v\nstderr %s", err, res.Stderr)
			}
			if cuts > 0 {
				stepSurvivedCuts(t, cutsDone, cuts, res, string(numberedLines(bulkLines)))
			}
			checkNumberedLines(t, "the hook's stdout", bytes.SplitAfter(res.Stdout, []byte("\n")), bulkLines)
			var logged [][]byte
			for _, l := range res.Log {
				if _, err := strconv.Atoi(l); err == nil {
					logged = append(logged, []byte(l+"\n"))
				}
			}
			checkNumberedLines(t, "the runner's step log", append(logged, nil), bulkLines)
			if res.ExitCode != 5 {
				t.Fatalf("exit %d, want the step's 5; stderr %s", res.ExitCode, res.Stderr)
			}
			cleanupLeavesNothing(ctx, t, c, ns, r)
		})
	}
}

// numberedLines is "1\n2\n...n\n".
func numberedLines(n int) []byte {
	b := make([]byte, 0, 8*n)
	for i := 1; i <= n; i++ {
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, '\n')
	}
	return b
}

// checkNumberedLines checks that lines (split after each newline, the last
// element empty) are "1\n" to "n\n", and names the first one that is not.
func checkNumberedLines(t *testing.T, what string, lines [][]byte, n int) {
	t.Helper()
	for i, l := range lines[:len(lines)-1] {
		if want := strconv.Itoa(i+1) + "\n"; string(l) != want {
			t.Fatalf("%s: line %d is %q, want %q (%d lines in all)", what, i+1, l, want, len(lines)-1)
		}
	}
	if got := len(lines) - 1; got != n || len(lines[len(lines)-1]) != 0 {
		t.Fatalf("%s: %d lines and %q after them, want %d", what, got, lines[len(lines)-1], n)
	}
}
