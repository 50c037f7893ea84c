package local_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/internal/testing/syncbuf"
	"github.com/tether-ci/tether/protocol"
)

// A job's own after-timeout wins over the shim's --after-timeout once the
// deadline stopped the job: with the shim's budget at 0 (no after-scripts
// after the deadline) the job's 10s lets its after-script run; with the
// shim's 10s, the job's negative after-timeout keeps it from running.
func TestJobAfterTimeoutOverridesTheShims(t *testing.T) {
	for _, tc := range []struct {
		shimBudget string
		jobBudget  time.Duration
		afterRuns  bool
	}{
		{shimBudget: "0s", jobBudget: 10 * time.Second, afterRuns: true},
		{shimBudget: "10s", jobBudget: -time.Second, afterRuns: false},
	} {
		t.Run("shim "+tc.shimBudget+" job "+tc.jobBudget.String(), func(t *testing.T) {
			// The shim's deadline counts from its start: it must pass
			// while the job's main script runs. A machine too slow to
			// start the job within it gets a later one.
			for _, deadline := range []string{"1", "5", "25"} {
				s := startShim(t, "--deadline", deadline, "--grace", "500ms", "--after-timeout", tc.shimBudget)
				var out syncbuf.Buffer
				long := script(t, "long.sh", "echo started; sleep 60\n")
				job := client.Job{
					Scripts:      []string{long},
					After:        []string{script(t, "after.sh", "echo after ran\n")},
					AfterTimeout: tc.jobBudget,
				}
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				res, err := client.Run(ctx, s, job, fastOpts(&out))
				cancel()
				if !errors.Is(err, client.ErrShimExited) || res.Exit == nil || res.Exit.Reason != protocol.ReasonDeadline {
					t.Fatalf("Run: %v, final record %+v; want the shim to end at its deadline", err, res.Exit)
				}
				if len(res.Statuses) == 0 {
					t.Logf("the job had not started by the shim's %ss deadline: again with a later one", deadline)
					continue
				}
				if st := res.Statuses[0]; st.Script != long || !strings.Contains(st.Error, "deadline") {
					t.Fatalf("first status %+v, want the deadline to stop %s", st, long)
				}
				if ran := strings.Contains(out.String(), "after ran"); ran != tc.afterRuns {
					t.Fatalf("output %q: after-script ran %v, want %v", out.String(), ran, tc.afterRuns)
				}
				return
			}
			t.Fatal("the job never started before the shim's deadline, even 25 s after the shim's start")
		})
	}
}
