//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/tether-ci/tether/integration/actions"
	"github.com/tether-ci/tether/internal/testing/actionsrunner"
)

// TestActionsDisruptionDrain: a drain started while an Actions step runs
// waits for the job (its pod stays until cleanup_job); with the protection
// off (TETHER_ACTIONS_CONFIG) it evicts the pod and the step fails saying
// so.
func TestActionsDisruptionDrain(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	for _, protected := range []bool{true, false} {
		name := map[bool]string{true: "protected", false: "unprotected"}[protected]
		t.Run(name, func(t *testing.T) {
			ns := c.NewNamespace(t, "act-drain")
			mark := "tether-e2e-drain=" + rand.String(6)
			conf := "label: [" + mark + "]\n"
			if !protected {
				conf += "no-disruption-protection: true\n"
			}
			cfg := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
				t.Fatal(err)
			}
			r := newActionsRunner(t, c, ns, actions.EnvConfig+"="+cfg)
			if res, err := r.PrepareJob(ctx, BashImage, nil, nil); err != nil || res.ExitCode != 0 {
				t.Fatalf("prepare_job: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
			}
			script := "echo started; sleep 6; echo done"
			if !protected {
				script = "echo started; sleep 120; echo never"
			}
			type stepResult struct {
				res actionsrunner.Result
				err error
			}
			step := make(chan stepResult, 1)
			go func() {
				res, err := r.RunScript(ctx, actionsrunner.Step{Script: script})
				step <- stepResult{res, err}
			}()
			time.Sleep(3 * time.Second)
			drained := drainJob(ctx, t, c, mark, 120*time.Second)
			var s stepResult
			select {
			case s = <-step:
			case <-time.After(90 * time.Second):
				t.Fatal("the step did not end")
			}
			all := string(s.res.Stdout) + string(s.res.Stderr) + strings.Join(s.res.Log, "\n")
			t.Logf("step: exit %d, err %v\nstdout %q\nstderr %s\nlog %s", s.res.ExitCode, s.err, s.res.Stdout, s.res.Stderr, strings.Join(s.res.Log, "\n"))
			if protected {
				if s.err != nil || s.res.ExitCode != 0 || !strings.Contains(string(s.res.Stdout), "started\ndone\n") {
					t.Fatalf("the protected step: exit %d, err %v; want 0 and its whole output", s.res.ExitCode, s.err)
				}
				select {
				case d := <-drained:
					t.Fatalf("the drain completed while the job's pod was still there:\n%s", d.out)
				case <-time.After(2 * time.Second):
				}
			} else if s.res.ExitCode == 0 || !strings.Contains(all, "evicted by the Eviction API (node drain)") {
				t.Errorf("the unprotected step: exit %d; want a failure saying the pod was evicted by the Eviction API (node drain)", s.res.ExitCode)
			}
			cleanupLeavesNothing(ctx, t, c, ns, r)
			select {
			case d := <-drained:
				t.Logf("kubectl drain:\n%s", d.out)
				if d.err != nil {
					t.Errorf("the drain failed: %v", d.err)
				}
			case <-time.After(90 * time.Second):
				t.Fatal("the drain did not complete after the job's cleanup")
			}
			waitNoJobLeft(ctx, t, c, ns, 60*time.Second)
		})
	}
}
