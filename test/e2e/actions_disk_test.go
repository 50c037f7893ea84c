//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/integration/actions"
	"github.com/tether-ci/tether/internal/testing/actionsrunner"
)

// fillRunnerDisk puts on the runner's disk what a runner image with a
// pre-filled tool cache and a job's earlier work leave there: a tool in
// _work/_tool (bin/mytool, with a relative symlink to it), files in the
// workspace (README.md, "sub dir"), an empty directory and a file in
// _temp/_github_home.
func fillRunnerDisk(t *testing.T, r *actionsrunner.Runner) {
	t.Helper()
	ws := filepath.Join(r.Work, r.Repo, r.Repo)
	tool := filepath.Join(r.Work, "_tool", "mytool", "1.2.3", "x64")
	for _, f := range []struct {
		path, content string
		mode          os.FileMode
	}{
		{filepath.Join(tool, "bin", "mytool-1.2.3"), "#!/bin/sh\necho \"mytool 1.2.3: $*\"\n", 0o755},
		{tool + ".complete", "", 0o644},
		{filepath.Join(ws, "README.md"), "# my-repo\n", 0o644},
		{filepath.Join(ws, "sub dir", "data file.txt"), "data in sub dir\n", 0o600},
		{filepath.Join(r.Temp, "_github_home", ".myrc"), "from the runner's home\n", 0o644},
	} {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.path, []byte(f.content), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("mytool-1.2.3", filepath.Join(tool, "bin", "mytool")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestActionsRunnerDisk: what the runner's disk holds in the workspace,
// _tool and _temp/_github_home is in the job's pod after prepare_job: a
// tool of the pre-filled tool cache runs from PATH once a step put it
// there with GITHUB_PATH (as setup-* actions do), a step runs in a
// working directory of the workspace with a space in its name, the
// workspace's files and HOME's are there. A tree over
// TETHER_ACTIONS_COPY_LIMIT fails prepare_job naming it, and leaves no pod.
func TestActionsRunnerDisk(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "actions-disk")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	r := newActionsRunner(t, c, ns)
	fillRunnerDisk(t, r)
	res, err := r.PrepareJob(ctx, BashImage, nil, nil)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("prepare_job: %v, exit %d\nstdout %s\nstderr %s", err, res.ExitCode, res.Stdout, res.Stderr)
	}
	if !strings.Contains(string(res.Stdout), "tether: copied 5 files (83 bytes)") {
		t.Errorf("prepare_job's output %q: want the copy reported", res.Stdout)
	}

	// A setup-* action finds the tool in the cache and adds it to PATH.
	res = mustStep(ctx, t, r, actionsrunner.Step{Script: `test -x "$RUNNER_TOOL_CACHE/mytool/1.2.3/x64/bin/mytool" && echo "$RUNNER_TOOL_CACHE/mytool/1.2.3/x64/bin" >> "$GITHUB_PATH"`,
		Env: map[string]string{"RUNNER_TOOL_CACHE": actions.ToolDir}})
	if res.ExitCode != 0 {
		t.Fatalf("setup step: exit %d, stdout %q, stderr %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	res = mustStep(ctx, t, r, actionsrunner.Step{Script: `mytool hello`})
	if res.ExitCode != 0 || string(res.Stdout) != "mytool 1.2.3: hello\n" {
		t.Errorf("the cached tool on PATH: exit %d, stdout %q, stderr %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	res = mustStep(ctx, t, r, actionsrunner.Step{Script: `pwd; cat "data file.txt"; stat -c %a "data file.txt"`, WorkingDirectory: r.Workspace() + "/sub dir"})
	if want := r.Workspace() + "/sub dir\ndata in sub dir\n600\n"; res.ExitCode != 0 || string(res.Stdout) != want {
		t.Errorf("working directory \"sub dir\": exit %d, stdout %q, want %q; stderr %s", res.ExitCode, res.Stdout, want, res.Stderr)
	}
	res = mustStep(ctx, t, r, actionsrunner.Step{Script: `cat README.md "$HOME/.myrc"; test -d empty && echo empty dir`})
	if want := "# my-repo\nfrom the runner's home\nempty dir\n"; res.ExitCode != 0 || string(res.Stdout) != want {
		t.Errorf("workspace and home: exit %d, stdout %q, want %q; stderr %s", res.ExitCode, res.Stdout, want, res.Stderr)
	}
	cleanupLeavesNothing(ctx, t, c, ns, r)

	// Over the bound: prepare_job fails before any pod exists.
	small := newActionsRunner(t, c, ns, actions.EnvCopyLimit+"=40")
	fillRunnerDisk(t, small)
	res, err = small.PrepareJob(ctx, BashImage, nil, nil)
	out := string(res.Stdout) + string(res.Stderr)
	if err != nil || res.ExitCode == 0 || !strings.Contains(out, actions.EnvCopyLimit+"=40") || !strings.Contains(out, filepath.Join(small.Work, "_tool")) {
		t.Errorf("prepare_job over the bound: %v, exit %d, output %s", err, res.ExitCode, out)
	}
	waitNoTetherObjects(ctx, t, c, ns, time.Minute)
}
