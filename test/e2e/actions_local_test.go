//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tether-ci/tether/integration/actions"
	"github.com/tether-ci/tether/internal/testing/actionsrunner"
)

// checkoutScript stands in for actions/checkout, run in the job
// container: it writes the repository's files into the workspace,
// among them four local actions (composite, JavaScript, docker://image,
// Dockerfile). Only the pod has them.
func checkoutScript(image string) string {
	return `set -e
mkdir -p .github/actions/comp .github/actions/js/dist .github/actions/img .github/actions/built
echo "a file of the composite action" > .github/actions/comp/msg.txt
cat > .github/actions/comp/action.yml <<'EOF'
name: composite
runs:
  using: composite
  steps:
    - run: echo "composite at $GITHUB_ACTION_PATH"; cat "$GITHUB_ACTION_PATH/msg.txt"
      shell: bash
EOF
cat > .github/actions/js/action.yaml <<'EOF'
name: js
inputs:
  who:
    default: world
runs:
  using: node20
  main: dist/index.js
EOF
cat > .github/actions/js/dist/index.js <<'EOF'
const fs = require('fs');
console.log('js local: hello ' + process.env.INPUT_WHO + ' from ' + process.env.GITHUB_ACTION_PATH);
fs.appendFileSync(process.env.GITHUB_OUTPUT, 'said=hello ' + process.env.INPUT_WHO + '\n');
EOF
cat > .github/actions/img/action.yml <<'EOF'
name: img
inputs:
  who:
    default: image
runs:
  using: docker
  image: docker://` + image + `
  entrypoint: sh
  args: ["-c", "echo img local: hello $INPUT_WHO in $PWD; cat README.md"]
EOF
printf 'runs:\n  using: docker\n  image: Dockerfile\n' > .github/actions/built/action.yml
printf 'FROM busybox\n' > .github/actions/built/Dockerfile
echo "# checked out in the pod" > README.md
`
}

// TestActionsLocalActions: after a checkout that ran in the pod, local
// actions (uses: ./path) of every kind run as the runner runs them: the
// runner reads their action.yml from its own disk before the step, which
// the hook brought back after the checkout step. Before the checkout the
// runner finds none. A Dockerfile action fails with the hook's message.
func TestActionsLocalActions(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "actions-local")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	runner := SimplePod(ns, "runner-0", BusyboxImage, "sleep", "3600")
	runner.Spec.Containers = append(runner.Spec.Containers, corev1.Container{
		Name: "runner", Image: ActionsRunnerImage, ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3600"}})
	c.CreatePod(ctx, t, runner)
	r := newActionsRunner(t, c, ns, actions.EnvRunnerPodName+"=runner-0")
	if res, err := r.PrepareJob(ctx, ActionsJobImage, nil, nil); err != nil || res.ExitCode != 0 {
		t.Fatalf("prepare_job: %v, exit %d\nstdout %s\nstderr %s", err, res.ExitCode, res.Stdout, res.Stderr)
	}
	if _, err := r.RunLocal(ctx, actionsrunner.LocalStep{Path: "./.github/actions/comp"}); err == nil || !strings.Contains(err.Error(), "Can't find 'action.yml'") {
		t.Fatalf("a local action before the checkout: %v, want the runner's error", err)
	}
	res := mustStep(ctx, t, r, actionsrunner.Step{Script: checkoutScript(BusyboxImage)})
	if res.ExitCode != 0 {
		t.Fatalf("checkout: exit %d, stdout %q, stderr %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	checkoutStderr := res.Stderr
	ws := filepath.Join(r.Work, r.Repo, r.Repo)
	if _, err := os.Stat(filepath.Join(ws, "README.md")); err == nil {
		t.Error("README.md came back to the runner: only action metadata should")
	}

	local := func(s actionsrunner.LocalStep) actionsrunner.Result {
		t.Helper()
		results, err := r.RunLocal(ctx, s)
		if err != nil || len(results) != 1 {
			t.Fatalf("%s: %v, %d results %+v (the checkout's stderr: %s)", s.Path, err, len(results), results, checkoutStderr)
		}
		return results[0]
	}
	res = local(actionsrunner.LocalStep{Path: "./.github/actions/comp"})
	if want := "composite at " + r.Workspace() + "/.github/actions/comp\na file of the composite action\n"; res.ExitCode != 0 || string(res.Stdout) != want {
		t.Errorf("composite: exit %d, stdout %q, want %q; stderr %s", res.ExitCode, res.Stdout, want, res.Stderr)
	}
	res = local(actionsrunner.LocalStep{Path: "./.github/actions/js", Inputs: map[string]string{"who": "tether"}})
	if want := "js local: hello tether from " + r.Workspace() + "/.github/actions/js\n"; res.ExitCode != 0 || string(res.Stdout) != want || r.Outputs["said"] != "hello tether" {
		t.Errorf("javascript: exit %d, stdout %q, want %q; outputs %q; stderr %s", res.ExitCode, res.Stdout, want, r.Outputs, res.Stderr)
	}
	res = local(actionsrunner.LocalStep{Path: "./.github/actions/img"})
	if want := "img local: hello image in /github/workspace\n# checked out in the pod\n"; res.ExitCode != 0 || string(res.Stdout) != want {
		t.Errorf("docker image: exit %d, stdout %q, want %q; stderr %s", res.ExitCode, res.Stdout, want, res.Stderr)
	}
	res = local(actionsrunner.LocalStep{Path: "./.github/actions/built"})
	if res.ExitCode == 0 || !strings.Contains(string(res.Stdout)+string(res.Stderr), "built from a Dockerfile, which tether actions cannot build") {
		t.Errorf("Dockerfile: exit %d, stdout %q, stderr %s", res.ExitCode, res.Stdout, res.Stderr)
	}

	// A change to an action's metadata in the pod reaches the runner.
	res = mustStep(ctx, t, r, actionsrunner.Step{Script: `sed -i 's/default: world/default: changed/' .github/actions/js/action.yaml`})
	if res.ExitCode != 0 {
		t.Fatalf("edit: exit %d, stderr %s", res.ExitCode, res.Stderr)
	}
	res = local(actionsrunner.LocalStep{Path: "./.github/actions/js"})
	if res.ExitCode != 0 || !strings.HasPrefix(string(res.Stdout), "js local: hello changed from") {
		t.Errorf("javascript after the edit: exit %d, stdout %q, stderr %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	cleanupLeavesNothing(ctx, t, c, ns, r)
}
