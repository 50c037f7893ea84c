//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tether-ci/tether/integration/actions"
	"github.com/tether-ci/tether/internal/testing/actionsrunner"
)

// newActionsRunner returns a runner stand-in whose container hook is the
// project's launcher (deploy/actions/tether-hook.sh) running this
// checkout's tether against namespace ns. extraEnv is added to the hook's
// environment (ACTIONS_RUNNER_POD_NAME, say).
func newActionsRunner(t *testing.T, c *Cluster, ns string, extraEnv ...string) *actionsrunner.Runner {
	t.Helper()
	env := append(os.Environ(),
		actions.EnvBin+"="+buildTether(t),
		actions.EnvKubeconfig+"="+c.Kubeconfig,
		actions.EnvNamespace+"="+ns,
		actions.EnvHelperImage+"="+HelperImage,
		actions.EnvPullPolicy+"=Never",
		actions.EnvJobTimeout+"=15m",
	)
	env = append(env, extraEnv...)
	launcher := filepath.Join(repoRoot(t), "deploy", "actions", "tether-hook.sh")
	r, err := actionsrunner.New(filepath.Join(t.TempDir(), "runner"), launcher, "my-repo", env)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// mustStep runs a run: step and fails the test on a stand-in error.
func mustStep(ctx context.Context, t *testing.T, r *actionsrunner.Runner, s actionsrunner.Step) actionsrunner.Result {
	t.Helper()
	res, err := r.RunScript(ctx, s)
	if err != nil {
		t.Fatalf("step %q: %v\nstdout %q\nstderr %s", s.Script, err, res.Stdout, res.Stderr)
	}
	return res
}

// cleanupLeavesNothing runs cleanup_job, fails the test unless it
// succeeds, and waits until no object of Tether's is left in ns.
func cleanupLeavesNothing(ctx context.Context, t *testing.T, c *Cluster, ns string, r *actionsrunner.Runner) {
	t.Helper()
	if res, err := r.CleanupJob(ctx); err != nil || res.ExitCode != 0 {
		t.Fatalf("cleanup_job: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
	}
	waitNoTetherObjects(ctx, t, c, ns, 2*time.Minute)
}
