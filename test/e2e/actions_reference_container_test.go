//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/tether-ci/tether/integration/actions/hookapi"
	"github.com/tether-ci/tether/internal/testing/actionsrunner"
)

// containerStepArgs are run_container_step's args as the runner sends
// them for a container action (ContainerActionHandler.cs; the reference's
// examples/run-container-step.json shape): every HookContainer key, the
// working directory /github/workspace, the step's env.
func containerStepArgs(r *actionsrunner.Runner, image string, env map[string]string, entryPoint string, entryPointArgs ...string) map[string]any {
	a := actionsrunner.Container(image, env, nil)
	a["entryPoint"] = entryPoint
	if entryPointArgs != nil {
		a["entryPointArgs"] = entryPointArgs
	}
	a["workingDirectory"] = "/github/workspace"
	a["environmentVariables"].(map[string]string)["HOME"] = "/github/home"
	return a
}

// TestActionsReferenceRunContainerStep runs the reference's
// run_container_step cases: k8s/tests/run-container-step-test.ts "should
// shold have env variables available" and "should run container step
// with envs CI and GITHUB_ACTIONS", and the whole job of
// k8s/tests/e2e-test.ts "should prepare job, run script step, run
// container step then cleanup without errors" (docker/tests/e2e-test.ts
// "should prepare job, then run script step, then run container step then
// cleanup"): prepare_job, a script step, container steps, cleanup_job
// leaving nothing. A failing container step's exit code is its own
// (Tether differs on purpose from the reference's 1).
func TestActionsReferenceRunContainerStep(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "actions-ref-cstep")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	r := newActionsRunner(t, c, ns)
	referencePrepare(ctx, t, r, examplePrepareArgs(r, BashImage, map[string]string{"NODE_ENV": "development"}, nil))
	if res := invokeStep(ctx, t, r, scriptArgs(r, nil, []string{}, "bash", "-c", "'echo script'")); res.ExitCode != 0 {
		t.Fatalf("script step: exit %d, stderr %s", res.ExitCode, res.Stderr)
	}
	env := map[string]string{"NODE_ENV": "development"}
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
	}{
		{"env variables available", []string{"-c", "'if [[ -z $NODE_ENV ]]; then exit 1; fi'"}, 0},
		{"CI and GITHUB_ACTIONS", []string{"-c", "'if [[ -z $GITHUB_ACTIONS ]] || [[ -z $CI ]]; then exit 1; fi'"}, 0},
		{"exit code", []string{"-c", "'exit 42'"}, 42},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := r.Invoke(ctx, hookapi.CommandRunContainerStep, containerStepArgs(r, BashImage, env, "bash", tc.args...))
			if err != nil || res.ExitCode != tc.wantCode {
				t.Errorf("exit %d (%v), want %d; stdout %q, stderr %s", res.ExitCode, err, tc.wantCode, res.Stdout, res.Stderr)
			}
		})
	}
	cleanupLeavesNothing(ctx, t, c, ns, r)
}
