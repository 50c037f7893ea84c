//go:build e2e

package e2e

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/internal/testing/gitlabcoord"
)

// These tests run whole jobs through the driver as GitLab Runner's Custom
// executor runs them (runJob), with the stage scripts its bash shell writer
// generates (gitlab_scripts_test.go), in a helper image shaped like
// GitLab's (GitLabHelperImage: gitlab-runner-helper and
// gitlab-runner-build, no gitlab-runner) whose gitlab-runner-helper is the
// project's test double (test/gitlab-runner-helper). The runner's scripts
// call `gitlab-runner`: that the driver makes it run gitlab-runner-helper
// is what the cache and artifact cases prove.

// missingRunner is the start of the runner's own line when a stage's
// `gitlab-runner --version` guard fails (shells/abstract.go,
// guardRunnerCommand).
const missingRunner = "Missing gitlab-runner. "

// hostNetworkPatch writes a pod patch putting the job pod on the host's
// network (pods reach the test's coordinator on 127.0.0.1 only so) and
// returns the driver config line that applies it.
func hostNetworkPatch(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "host-network.yaml")
	if err := os.WriteFile(p, []byte("spec:\n  hostNetwork: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return "pod-patch: " + p + "\n"
}

// startCoordinator starts the artifacts coordinator for the test.
func startCoordinator(t *testing.T) *gitlabcoord.Coordinator {
	t.Helper()
	coord, err := gitlabcoord.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = coord.Close() })
	return coord
}

// zipEntry returns the content of name in the zip archive data.
func zipEntry(t *testing.T, data []byte, name string) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("not a zip archive: %v", err)
	}
	for _, f := range zr.File {
		if f.Name != name {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = rc.Close() }()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Fatalf("the archive has no %s", name)
	return nil
}

// requireRunnerCommand fails the test when a stage's guard found no
// gitlab-runner: the stage silently skipped its cache or artifacts.
func requireRunnerCommand(t *testing.T, run *standInRun) {
	t.Helper()
	for _, l := range strings.Split(run.Log, "\n") {
		if strings.Contains(l, missingRunner) {
			t.Fatalf("a stage found no gitlab-runner in the helper container (GitLab's helper image has gitlab-runner-helper only): %q", l)
		}
	}
}

// The bytes the jobs write: binary, with NUL, 0xff and no final newline.
const (
	cacheContent    = "cached\x00\x01\xff"
	artifactContent = "artifact\x00\x01\xfe\xff\r\nend"
)

// printfOctal is a printf format writing s (bash's printf, octal escapes).
func printfOctal(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		b.WriteString("\\")
		b.WriteString(string([]byte{'0' + c>>6, '0' + (c>>3)&7, '0' + c&7}))
	}
	return "printf '" + b.String() + "'"
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestGitLabStandInCache: a job's archive_cache saves its cache paths into
// the cache volume (a PersistentVolumeClaim at cache-dir) as the runner's
// helper does (CACHE_DIR/KEY/cache.zip, a zip), and the next job's
// restore_cache extracts them byte-exact before its script runs; the first
// job's restore_cache finds no cache and says so as the runner does,
// without failing.
func TestGitLabStandInCache(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-cache")
	dir := hostPathClaim(ctx, t, c, ns, "cache")
	base := time.Now().UnixNano() % 1_000_000_000
	job := func(id int64) *runnerStandIn {
		return newRunnerStandInJob(t, c, ns, standInJob{
			ID: id, GitLabHelperImage: GitLabHelperImage, Config: "volume: [pvc:cache:/cache]\n",
			Caches: []runnerCache{{Key: "deps-v1", Paths: []string{"deps/"}, Policy: "pull-push", When: "on_success"}},
		})
	}

	r1 := job(base)
	run := r1.runJob(ctx, "mkdir -p deps && "+printfOctal(cacheContent)+" > deps/lib.bin")
	requireRunnerCommand(t, run)
	if run.Failed != "" {
		t.Fatalf("job 1 failed at %s", run.Failed)
	}
	for _, want := range []string{"Checking cache for deps-v1...", "WARNING: Cache file does not exist", "Failed to extract cache", "Creating cache deps-v1...", "Created cache"} {
		if !strings.Contains(run.Log, want) {
			t.Errorf("job 1's log lacks %q", want)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "deps-v1", "cache.zip"))
	if err != nil {
		t.Fatalf("the cache archive is not in the cache volume: %v", err)
	}
	if got := zipEntry(t, data, "deps/lib.bin"); string(got) != cacheContent {
		t.Fatalf("the cache archive holds deps/lib.bin = %q, want %q", got, cacheContent)
	}
	r1.cleanup(ctx)
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)

	r2 := job(base + 1)
	run = r2.runJob(ctx, "sha256sum deps/lib.bin")
	requireRunnerCommand(t, run)
	if run.Failed != "" {
		t.Fatalf("job 2 failed at %s", run.Failed)
	}
	if !strings.Contains(run.Log, "Successfully extracted cache") {
		t.Error("job 2's log does not say the cache was extracted")
	}
	if want := sha256Hex(cacheContent) + "  deps/lib.bin"; !strings.Contains(run.Log, want) {
		t.Fatalf("job 2's script did not find the cached file byte-exact (want %q in its log)", want)
	}
	r2.cleanup(ctx)
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}

// TestGitLabStandInArtifacts: a job's upload_artifacts_on_success sends
// its artifacts to the coordinator (POST /api/v4/jobs/ID/artifacts with
// the job's token, artifact_format zip, artifact_type archive, a zip) and a
// dependent job's download_artifacts fetches them with the dependency's
// token and extracts them byte-exact before its script runs; its file
// variable is a file under the project's temporary directory.
func TestGitLabStandInArtifacts(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-artifacts")
	coord := startCoordinator(t)
	patch := hostNetworkPatch(t)
	id1 := time.Now().UnixNano() % 1_000_000_000
	id2 := id1 + 1
	coord.AddJob(id1, standInToken(id1))
	coord.AddJob(id2, standInToken(id2))

	r1 := newRunnerStandInJob(t, c, ns, standInJob{
		ID: id1, GitLabHelperImage: GitLabHelperImage, Config: patch, URL: coord.URL(), Name: "build",
		Artifacts: []runnerArtifact{{Paths: []string{"dist/"}, When: "on_success", Format: "zip", Type: "archive", ExpireIn: "1 week"}},
	})
	run := r1.runJob(ctx, "mkdir -p dist && "+printfOctal(artifactContent)+" > dist/app.bin && echo report > dist/report.txt")
	requireRunnerCommand(t, run)
	if run.Failed != "" {
		t.Fatalf("job 1 failed at %s", run.Failed)
	}
	up, ok := coord.Uploaded(id1)
	if !ok {
		t.Fatal("the coordinator received no artifacts from job 1")
	}
	if up.Filename != "artifacts.zip" || up.Query["artifact_format"] != "zip" || up.Query["artifact_type"] != "archive" || up.Query["expire_in"] != "1 week" {
		t.Errorf("uploaded %q with query %v; want artifacts.zip, zip, archive, 1 week", up.Filename, up.Query)
	}
	if got := zipEntry(t, up.Data, "dist/app.bin"); string(got) != artifactContent {
		t.Fatalf("the uploaded archive holds dist/app.bin = %q, want %q", got, artifactContent)
	}
	r1.cleanup(ctx)

	dep := runnerDependency{ID: id1, Token: standInToken(id1), Name: "build"}
	dep.ArtifactsFile.Filename = up.Filename
	dep.ArtifactsFile.Size = int64(len(up.Data))
	r2 := newRunnerStandInJob(t, c, ns, standInJob{
		ID: id2, GitLabHelperImage: GitLabHelperImage, Config: patch, URL: coord.URL(), Name: "test",
		Dependencies: []runnerDependency{dep},
		// A file variable: the runner writes it under $CI_PROJECT_DIR.tmp.
		Variables: []map[string]any{{"key": "DEPLOY_CONF", "value": "conf-content", "file": true}},
	})
	run = r2.runJob(ctx, "sha256sum dist/app.bin", "cat dist/report.txt", `echo "conf at $DEPLOY_CONF: $(cat "$DEPLOY_CONF")"`)
	requireRunnerCommand(t, run)
	if run.Failed != "" {
		t.Fatalf("job 2 failed at %s", run.Failed)
	}
	for _, want := range []string{"Downloading artifacts for build (", "Downloading artifacts from coordinator... ok", sha256Hex(artifactContent) + "  dist/app.bin", "\nreport\n", "\nconf at /builds/project.tmp/DEPLOY_CONF: conf-content\n"} {
		if !strings.Contains(run.Log, want) {
			t.Errorf("job 2's log lacks %q", want)
		}
	}
	if _, ok := coord.Uploaded(id2); ok {
		t.Error("job 2, which has no artifacts, uploaded some")
	}
	r2.cleanup(ctx)
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}

// TestGitLabStandInNoHelperBinary: a job with a cache and artifacts whose
// helper image has neither gitlab-runner nor gitlab-runner-helper (the git
// image): each cache and artifact stage prints the runner's own "Missing
// gitlab-runner. … is disabled." line and succeeds, so the job's result is
// unchanged (success), nothing is uploaded, and the job log carries the
// driver's one WARNING about it exactly once.
func TestGitLabStandInNoHelperBinary(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-nohelper")
	coord := startCoordinator(t)
	id := time.Now().UnixNano() % 1_000_000_000
	coord.AddJob(id, standInToken(id))
	r := newRunnerStandInJob(t, c, ns, standInJob{
		ID: id, GitLabHelperImage: GitImage, URL: coord.URL(),
		Caches:    []runnerCache{{Key: "deps-v1", Paths: []string{"deps/"}}},
		Artifacts: []runnerArtifact{{Paths: []string{"dist/"}, Format: "zip", Type: "archive"}},
	})
	run := r.runJob(ctx, "mkdir -p deps dist && echo x > dist/f && echo build-ran")
	if run.Failed != "" {
		t.Fatalf("the job failed at %s; without the helper binary its result must be unchanged (success)", run.Failed)
	}
	for _, want := range []string{"\nbuild-ran\n",
		missingRunner + "Extracting cache is disabled.",
		missingRunner + "Creating cache is disabled.",
		missingRunner + "Uploading artifacts is disabled."} {
		if !strings.Contains(run.Log, want) {
			t.Errorf("the job log lacks %q", want)
		}
	}
	if _, ok := coord.Uploaded(id); ok || coord.UploadTries(id) != 0 {
		t.Error("artifacts reached the coordinator without the helper binary")
	}
	var warnings []string
	for _, l := range strings.Split(run.Log, "\n") {
		if strings.HasPrefix(l, "WARNING: ") && strings.Contains(l, "gitlab-helper-image") {
			warnings = append(warnings, l)
		}
	}
	if len(warnings) != 1 {
		t.Fatalf("the job log has %d WARNING lines naming gitlab-helper-image, want exactly one: %q", len(warnings), warnings)
	}
	if w := warnings[0]; !strings.Contains(w, GitImage) || !strings.Contains(w, "gitlab-runner-helper") {
		t.Errorf("the warning %q names neither the image nor gitlab-runner-helper", w)
	}
	r.cleanup(ctx)
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}

// TestGitLabStandInArtifactsRefused: the coordinator refuses the upload
// with 413 (GitLab's answer to an archive over the size limit): the
// helper's uploader logs the runner's ERROR line and "FATAL: too large",
// does not retry, and exits 1, so upload_artifacts_on_success fails as a
// build failure with exit code 1 — what the runner reports for its own
// executors (common/build.go: the upload stage's error fails the job).
func TestGitLabStandInArtifactsRefused(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-refused")
	coord := startCoordinator(t)
	id := time.Now().UnixNano() % 1_000_000_000
	coord.AddJob(id, standInToken(id))
	coord.Refuse(id, 413)
	r := newRunnerStandInJob(t, c, ns, standInJob{
		ID: id, GitLabHelperImage: GitLabHelperImage, Config: hostNetworkPatch(t), URL: coord.URL(),
		Artifacts: []runnerArtifact{{Paths: []string{"dist/"}, When: "on_success", Format: "zip", Type: "archive"}},
	})
	run := r.runJob(ctx, "mkdir -p dist && echo big > dist/f")
	requireRunnerCommand(t, run)
	if run.Failed != "upload_artifacts_on_success" {
		t.Fatalf("the first failed stage is %q, want upload_artifacts_on_success", run.Failed)
	}
	if got, w := run.Codes["upload_artifacts_on_success"], run.Written["upload_artifacts_on_success"]; got != strconv.Itoa(standInBuildFailure) || w != "1" {
		t.Fatalf("upload_artifacts_on_success: run exited %s with %q in BUILD_EXIT_CODE_FILE; want the build failure code 1 and the uploader's 1", got, w)
	}
	for _, want := range []string{`ERROR: Uploading artifacts as "archive" to coordinator... 413 Request Entity Too Large`, "FATAL: too large"} {
		if !strings.Contains(run.Log, want) {
			t.Errorf("the job log lacks %q", want)
		}
	}
	if n := coord.UploadTries(id); n != 1 {
		t.Errorf("%d upload requests; a 413 is not retried", n)
	}
	r.cleanup(ctx)
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}
