//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runnerHelperDouble is a gitlab-runner-helper test double that only says
// how it was called: the name (argv[0]) and the arguments. It stands in
// for nothing the real helper does with them; it proves which binary a
// stage script's `gitlab-runner` ran.
const runnerHelperDouble = "#!/bin/sh\necho \"gitlab-runner-helper double called as ${0##*/}: $*\"\n"

// restoreCacheBody is a restore_cache stage shaped like the one GitLab
// Runner's bash shell writer generates for a job with one cache
// (shells/abstract.go: cacheExtractor, guardRunnerCommand,
// addExtractCacheCommand; shells/bash.go: IfCmd, IfCmdWithOutput):
// gitlab-runner guarded by `--version`, a warning when it is missing.
// The last line shows what scripts find under the name.
const restoreCacheBody = `if gitlab-runner "--version" >/dev/null 2>&1 ; then
  echo "Checking cache for default-1-protected..."
  if gitlab-runner "cache-extractor" "--file" "../../../cache/project/default-1-protected/cache.zip" "--timeout" "10" ; then
    echo "Successfully extracted cache"
  else
    echo "Failed to extract cache"
  fi
else
  echo "Missing gitlab-runner. Extracting cache is disabled."
fi
command -v gitlab-runner || echo "no gitlab-runner here"
`

// withCache adds a cache (paths set, as .gitlab-ci.yml's cache: gives it)
// to the stand-in's job response.
func withCache(t *testing.T, r *runnerStandIn) {
	t.Helper()
	p := filepath.Join(r.dir, "response.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var job map[string]any
	if err := json.Unmarshal(b, &job); err != nil {
		t.Fatal(err)
	}
	job["cache"] = []map[string]any{{"key": "default", "paths": []string{"vendor/"}, "policy": "pull-push", "when": "on_success"}}
	if b, err = json.Marshal(job); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// prepareOutput runs prepare_exec and returns its output (the job log's
// prepare section); it fails the test if prepare fails.
func (r *runnerStandIn) prepareOutput(ctx context.Context) string {
	r.t.Helper()
	out, err := r.command(ctx, "prepare").CombinedOutput()
	r.t.Logf("prepare:\n%s", out)
	r.t.Cleanup(func() { r.cleanup(context.Background()) })
	if err != nil {
		r.t.Fatalf("prepare: %v", err)
	}
	return string(out)
}

// TestGitLabDriverRunnerCommand: in a helper container whose PATH has
// gitlab-runner-helper (the double, from a ConfigMap mounted at
// /usr/local/bin by a pod patch) and no gitlab-runner, a stage script's
// `gitlab-runner` runs gitlab-runner-helper: the runner's guard passes,
// the call reaches the helper under the name gitlab-runner, and `command
// -v` finds it; prepare says nothing about it. The build container, which
// has neither, is unchanged.
func TestGitLabDriverRunnerCommand(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-runnercmd")
	c.CreateScripts(ctx, t, ns, "runner-helper-double", map[string]string{"gitlab-runner-helper": runnerHelperDouble})
	patch := filepath.Join(t.TempDir(), "helper-bin.yaml")
	if err := os.WriteFile(patch, []byte(`spec:
  volumes:
  - name: runner-helper-double
    configMap:
      name: runner-helper-double
      defaultMode: 0755
  initContainers:
  - name: helper
    volumeMounts:
    - name: runner-helper-double
      mountPath: /usr/local/bin
`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := newRunnerStandInJob(t, c, ns, standInJob{Config: "pod-patch: " + patch + "\n"})
	withCache(t, r)
	if out := r.prepareOutput(ctx); strings.Contains(out, "will not be saved") {
		t.Fatalf("prepare warned for a helper image that has gitlab-runner-helper:\n%s", out)
	}
	got, code, _ := r.run(ctx, "restore_cache", restoreCacheBody, nil)
	want := "Checking cache for default-1-protected...\n" +
		"gitlab-runner-helper double called as gitlab-runner: cache-extractor --file ../../../cache/project/default-1-protected/cache.zip --timeout 10\n" +
		"Successfully extracted cache\n" +
		"/tether/spool-helper/bin/gitlab-runner\n"
	if code != 0 || got != want {
		t.Fatalf("restore_cache in the helper container: exit %d, output\n%s\nwant\n%s", code, got, want)
	}
	got, code, _ = r.run(ctx, "build_script", "command -v gitlab-runner || echo 'no gitlab-runner here'\necho \"PATH=$PATH\"\n", nil)
	if want := "no gitlab-runner here\nPATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"; code != 0 || got != want {
		t.Fatalf("build_script in the build container (neither binary): exit %d, output %q, want %q", code, got, want)
	}
	r.cleanup(ctx)
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}

// TestGitLabDriverRunnerCommandMissing: a job with a cache whose helper
// image has neither gitlab-runner nor gitlab-runner-helper: prepare's
// output (the job log) says so exactly once, naming the image and the
// setting; the cache stage runs as the runner wrote it (its guard warns)
// and succeeds, as it would without Tether's line.
func TestGitLabDriverRunnerCommandMissing(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-runnercmd-missing")
	r := newRunnerStandInJob(t, c, ns, standInJob{})
	withCache(t, r)
	out := r.prepareOutput(ctx)
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "will not be saved or restored") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("prepare output has %d lines saying caches will not be saved, want exactly one:\n%s", len(lines), out)
	}
	for _, w := range []string{"WARNING: ", "this job's caches will not be saved or restored", GitImage, "neither gitlab-runner-helper nor gitlab-runner", "set gitlab-helper-image"} {
		if !strings.Contains(lines[0], w) {
			t.Errorf("the warning %q does not say %q", lines[0], w)
		}
	}
	got, code, _ := r.run(ctx, "restore_cache", restoreCacheBody, nil)
	if want := "Missing gitlab-runner. Extracting cache is disabled.\nno gitlab-runner here\n"; code != 0 || got != want {
		t.Fatalf("restore_cache without the helper binary: exit %d, output %q, want %q", code, got, want)
	}
	r.cleanup(ctx)
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}
