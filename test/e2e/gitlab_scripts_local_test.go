//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether-ci/tether/internal/testing/gitlabcoord"
	"github.com/tether-ci/tether/internal/testing/testbin"
)

// helperDoublePkg is the gitlab-runner-helper test double's main package.
const helperDoublePkg = "github.com/tether-ci/tether/test/gitlab-runner-helper"

// runLocalStage runs a generated stage script with this machine's bash
// and PATH, as the runner's shell executor would, and returns its output
// and exit code.
func runLocalStage(t *testing.T, j *runnerJob, path, stage string, commands ...string) (string, int) {
	t.Helper()
	script, ok := j.stageScript(stage, commands)
	if !ok {
		t.Fatalf("the runner would skip %s", stage)
	}
	cmd := exec.CommandContext(t.Context(), "bash", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+path)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s (exit %d):\n%s", stage, code, out)
	return string(out), code
}

// TestGitLabRunnerScriptsLocal checks the generated scripts and the helper
// double together without the node: with bash on this machine and the
// double as `gitlab-runner` on PATH, a cache made by archive_cache is
// restored by the next job's restore_cache and artifacts go to the
// coordinator and back byte-exact; without any gitlab-runner, the
// runner's own "Missing gitlab-runner" lines and success.
func TestGitLabRunnerScriptsLocal(t *testing.T) {
	bins := t.TempDir()
	double, err := testbin.BuildStatic(t.Context(), bins, "gitlab-runner-helper", helperDoublePkg)
	if err != nil {
		t.Fatal(err)
	}
	withRunner := t.TempDir()
	if err := os.Symlink(double, filepath.Join(withRunner, "gitlab-runner")); err != nil {
		t.Fatal(err)
	}
	path := withRunner + ":" + os.Getenv("PATH")
	coord, err := gitlabcoord.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = coord.Close() }()

	root := t.TempDir()
	job := func(id int64) *runnerJob {
		coord.AddJob(id, standInToken(id))
		return &runnerJob{ID: id, Token: standInToken(id), URL: coord.URL(), Name: "build", Ref: "main",
			BuildsDir: filepath.Join(root, "builds", fmt.Sprint("job", id)), CacheDir: filepath.Join(root, "cache"), ProjectPath: "group/project",
			Caches:    []runnerCache{{Key: "deps-v1", Paths: []string{"deps"}}},
			Artifacts: []runnerArtifact{{Paths: []string{"dist"}, Format: "zip", Type: "archive", When: "on_success"}},
			Variables: []runnerVar{{Key: "CONFIG_FILE", Value: "file-variable-content", File: true}},
		}
	}
	j1 := job(1)
	if _, code := runLocalStage(t, j1, path, "get_sources"); code != 0 {
		t.Fatal("get_sources failed")
	}
	out, code := runLocalStage(t, j1, path, "restore_cache")
	if code != 0 || !strings.Contains(out, "Failed to extract cache") {
		t.Fatalf("the first job's restore_cache: exit %d; want 0 and the runner's warning", code)
	}
	if _, code := runLocalStage(t, j1, path, "step_script",
		`mkdir -p deps dist && echo cached > deps/lib.txt && printf 'a\0b' > dist/app.bin`,
		`test "$(cat "$CONFIG_FILE")" = file-variable-content`); code != 0 {
		t.Fatal("step_script failed")
	}
	if out, code := runLocalStage(t, j1, path, "archive_cache"); code != 0 || !strings.Contains(out, "Created cache") {
		t.Fatalf("archive_cache: exit %d", code)
	}
	if out, code := runLocalStage(t, j1, path, "upload_artifacts_on_success"); code != 0 || !strings.Contains(out, "201 Created") {
		t.Fatalf("upload_artifacts_on_success: exit %d", code)
	}

	j2 := job(2)
	j2.Dependencies = []runnerDependency{{ID: 1, Token: standInToken(1), Name: "build"}}
	j2.Dependencies[0].ArtifactsFile.Filename = "artifacts.zip"
	runLocalStage(t, j2, path, "get_sources")
	if out, code := runLocalStage(t, j2, path, "restore_cache"); code != 0 || !strings.Contains(out, "Successfully extracted cache") {
		t.Fatalf("restore_cache: exit %d", code)
	}
	if _, code := runLocalStage(t, j2, path, "download_artifacts"); code != 0 {
		t.Fatalf("download_artifacts: exit %d", code)
	}
	if out, code := runLocalStage(t, j2, path, "step_script", `cat deps/lib.txt`, `od -c dist/app.bin | head -1`); code != 0 ||
		!strings.Contains(out, "\ncached\n") || !strings.Contains(out, `a  \0   b`) {
		t.Fatalf("step_script of the second job: exit %d", code)
	}

	// No gitlab-runner at all: the runner's own warnings, and success.
	j3 := job(3)
	noRunner := os.Getenv("PATH")
	runLocalStage(t, j3, noRunner, "get_sources")
	for stage, line := range map[string]string{
		"restore_cache":               "Missing gitlab-runner. Extracting cache is disabled.",
		"archive_cache":               "Missing gitlab-runner. Creating cache is disabled.",
		"upload_artifacts_on_success": "Missing gitlab-runner. Uploading artifacts is disabled.",
	} {
		if out, code := runLocalStage(t, j3, noRunner, stage); code != 0 || !strings.Contains(out, line) {
			t.Errorf("%s without gitlab-runner: exit %d; want 0 and %q", stage, code, line)
		}
	}
	if _, ok := coord.Uploaded(3); ok {
		t.Error("job 3 uploaded artifacts without gitlab-runner")
	}

	// A refused upload fails the stage with the uploader's exit code 1.
	j4 := job(4)
	coord.Refuse(4, 413)
	runLocalStage(t, j4, path, "get_sources")
	runLocalStage(t, j4, path, "step_script", `mkdir -p dist && echo x > dist/f`)
	if out, code := runLocalStage(t, j4, path, "upload_artifacts_on_success"); code != 1 || !strings.Contains(out, "FATAL: too large") {
		t.Fatalf("a refused upload: exit %d; want 1 and FATAL: too large", code)
	}
}
