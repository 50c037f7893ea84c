package main

import (
	"archive/zip"
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/internal/testing/gitlabcoord"
	"github.com/tether-ci/tether/internal/testing/testbin"
)

// binPath is the double built once for the package's tests (set by TestMain).
var binPath string

func TestMain(m *testing.M) {
	os.Exit(testbin.Main(m, map[string]string{"gitlab-runner-helper": "github.com/tether-ci/tether/test/gitlab-runner-helper"}, func(dir string) {
		binPath = filepath.Join(dir, "gitlab-runner-helper")
	}))
}

// helper runs the double in dir and returns its output and exit code.
func helper(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), binPath, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	t.Logf("gitlab-runner-helper %s (exit %d):\n%s", strings.Join(args, " "), code, out)
	return string(out), code
}

// writeTree creates files (path → content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o640); err != nil {
			t.Fatal(err)
		}
	}
}

// checkTree fails unless every file has its content under dir.
func checkTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if string(got) != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
}

func TestVersion(t *testing.T) {
	out, code := helper(t, t.TempDir(), "--version")
	if code != 0 || !strings.HasPrefix(out, "Version:") {
		t.Fatalf("--version: exit %d, %q", code, out)
	}
	if _, code := helper(t, t.TempDir(), "no-such-command"); code != 1 {
		t.Fatalf("an unknown command exited %d, want 1", code)
	}
}

// The cache stages: the first job finds no cache (the runner's warning and
// exit 1, which its script turns into "Failed to extract cache"), archives
// its paths, and the next job's extractor restores them byte-exact, in
// another directory, modes kept; a path outside the project is left out.
func TestCacheRoundTrip(t *testing.T) {
	root := t.TempDir()
	cacheFile := filepath.Join(root, "cache", "key", "cache.zip")
	job1 := filepath.Join(root, "job1")
	files := map[string]string{"vendor/a.txt": "alpha\n", "vendor/sub/b.bin": "\x00\x01\x02binary", "top.txt": "top"}
	writeTree(t, job1, files)
	writeTree(t, root, map[string]string{"outside.txt": "no"})
	if err := os.Chmod(filepath.Join(job1, "top.txt"), 0o755); err != nil {
		t.Fatal(err)
	}

	out, code := helper(t, job1, "cache-extractor", "--file", cacheFile, "--timeout", "10")
	if code != 1 || !strings.Contains(out, "WARNING: Cache file does not exist\n") {
		t.Fatalf("extracting a missing cache: exit %d, %q; want 1 and the runner's warning", code, out)
	}

	out, code = helper(t, job1, "cache-archiver", "--file", cacheFile, "--timeout", "10",
		"--path", "vendor", "--path", "top.txt", "--path", "../outside.txt")
	if code != 0 {
		t.Fatalf("cache-archiver: exit %d: %s", code, out)
	}
	if !strings.Contains(out, "vendor: found 4 matching artifact files and directories") ||
		!strings.Contains(out, "artifact path is not a subpath of project directory") {
		t.Errorf("cache-archiver's lines %q", out)
	}
	zr, err := zip.OpenReader(cacheFile)
	if err != nil {
		t.Fatalf("the cache is no zip: %v", err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	_ = zr.Close()
	if got := strings.Join(names, " "); got != "top.txt vendor/ vendor/a.txt vendor/sub/ vendor/sub/b.bin" {
		t.Errorf("the archive holds %q", got)
	}

	job2 := filepath.Join(root, "job2")
	if err := os.MkdirAll(job2, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, code := helper(t, job2, "cache-extractor", "--file", cacheFile, "--timeout", "10"); code != 0 {
		t.Fatalf("cache-extractor: exit %d: %s", code, out)
	}
	checkTree(t, job2, files)
	if fi, err := os.Stat(filepath.Join(job2, "top.txt")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("top.txt's mode after extraction: %v %v", fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(job2, "outside.txt")); err == nil {
		t.Error("a path outside the project was archived")
	}
}

// The archiver leaves an archive newer than every file alone ("Archive is
// up to date!"), and writes it again once a file is newer.
func TestCacheArchiveUpToDate(t *testing.T) {
	root := t.TempDir()
	cacheFile := filepath.Join(root, "cache.zip")
	wd := filepath.Join(root, "wd")
	writeTree(t, wd, map[string]string{"deps/a": "1"})
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(wd, "deps", "a"), old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(wd, "deps"), old, old); err != nil {
		t.Fatal(err)
	}
	archive := func() string {
		out, code := helper(t, wd, "cache-archiver", "--file", cacheFile, "--path", "deps")
		if code != 0 {
			t.Fatalf("cache-archiver: exit %d", code)
		}
		return out
	}
	if out := archive(); strings.Contains(out, "up to date") {
		t.Fatal("a missing archive was up to date")
	}
	if out := archive(); !strings.Contains(out, "Archive is up to date!") {
		t.Fatalf("nothing changed, yet the archive was written again: %q", out)
	}
	writeTree(t, wd, map[string]string{"deps/a": "2"})
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(wd, "deps", "a"), future, future); err != nil {
		t.Fatal(err)
	}
	if out := archive(); strings.Contains(out, "up to date") {
		t.Fatal("a changed file left the archive as it was")
	}
	data, err := os.ReadFile(cacheFile)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if f.Name == "deps/a" {
			rc, _ := f.Open()
			b, _ := io.ReadAll(rc)
			_ = rc.Close()
			if string(b) != "2" {
				t.Fatalf("deps/a in the new archive = %q, want 2", b)
			}
			return
		}
	}
	t.Fatal("deps/a is not in the archive")
}

// A zip whose entry climbs out of the working directory is refused.
func TestExtractRefusesEscapingEntry(t *testing.T) {
	root := t.TempDir()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("../escaped.txt")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(w, "x")
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "cache.zip")
	if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	wd := filepath.Join(root, "wd")
	if err := os.Mkdir(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	out, code := helper(t, wd, "cache-extractor", "--file", file)
	if code != 1 || !strings.Contains(out, "FATAL: ") {
		t.Fatalf("exit %d, %q; want a fatal error", code, out)
	}
	if _, err := os.Stat(filepath.Join(root, "escaped.txt")); err == nil {
		t.Fatal("the entry was written outside the working directory")
	}
}

func startCoordinator(t *testing.T) *gitlabcoord.Coordinator {
	t.Helper()
	c, err := gitlabcoord.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Artifacts: the uploader POSTs a zip to the coordinator (the runner's
// query, form file name and token), a dependent job's downloader gets it
// and extracts it byte-exact.
func TestArtifactsRoundTrip(t *testing.T) {
	c := startCoordinator(t)
	c.AddJob(101, "token-101")
	root := t.TempDir()
	up := filepath.Join(root, "up")
	files := map[string]string{"out/report.txt": "report\n", "out/data.bin": strings.Repeat("\xff\x00", 5000)}
	writeTree(t, up, files)
	out, code := helper(t, up, "artifacts-uploader", "--url", c.URL(), "--token", "token-101", "--id", "101",
		"--path", "out", "--artifact-format", "zip", "--artifact-type", "archive", "--expire-in", "1 day")
	if code != 0 || !strings.Contains(out, "Uploading artifacts as \"archive\" to coordinator... 201 Created") {
		t.Fatalf("upload: exit %d, %q", code, out)
	}
	u, ok := c.Uploaded(101)
	if !ok {
		t.Fatal("nothing stored")
	}
	if u.Filename != "artifacts.zip" || u.Query["artifact_format"] != "zip" || u.Query["artifact_type"] != "archive" || u.Query["expire_in"] != "1 day" {
		t.Errorf("stored %q with query %v", u.Filename, u.Query)
	}

	c.AddJob(102, "token-102")
	down := filepath.Join(root, "down")
	if err := os.Mkdir(down, 0o755); err != nil {
		t.Fatal(err)
	}
	// The dependency's own token downloads its artifacts.
	if out, code := helper(t, down, "artifacts-downloader", "--url", c.URL(), "--token", "token-101", "--id", "101"); code != 0 ||
		!strings.Contains(out, "Downloading artifacts from coordinator... ok") {
		t.Fatalf("download: exit %d, %q", code, out)
	}
	checkTree(t, down, files)

	// A wrong token is forbidden and a job without artifacts is not found:
	// both fail at once, with one request.
	if out, code := helper(t, down, "artifacts-downloader", "--url", c.URL(), "--token", "wrong", "--id", "101"); code != 1 ||
		!strings.Contains(out, "FATAL: permission denied") || strings.Contains(out, "Retrying") {
		t.Errorf("wrong token: exit %d, %q", code, out)
	}
	if out, code := helper(t, down, "artifacts-downloader", "--url", c.URL(), "--token", "token-102", "--id", "102"); code != 1 ||
		!strings.Contains(out, "FATAL: file does not exist") {
		t.Errorf("no artifacts: exit %d, %q", code, out)
	}
}

// A refused upload: 413 and 403 fail at once (one request, FATAL, exit
// 1); a 500 is retried up to the runner's three tries.
func TestArtifactsUploadRefused(t *testing.T) {
	for _, tc := range []struct {
		status int
		fatal  string
		tries  int
	}{
		{http.StatusRequestEntityTooLarge, "FATAL: too large", 1},
		{http.StatusForbidden, "FATAL: permission denied", 1},
		{http.StatusInternalServerError, "FATAL: invalid argument", 3},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			c := startCoordinator(t)
			c.AddJob(7, "tok")
			c.Refuse(7, tc.status)
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{"a.txt": "a"})
			out, code := helper(t, dir, "artifacts-uploader", "--url", c.URL(), "--token", "tok", "--id", "7",
				"--path", "a.txt", "--artifact-format", "zip", "--artifact-type", "archive")
			if code != 1 || !strings.Contains(out, tc.fatal) {
				t.Fatalf("exit %d, %q; want 1 and %q", code, out, tc.fatal)
			}
			if got := c.UploadTries(7); got != tc.tries {
				t.Fatalf("%d upload requests, want %d", got, tc.tries)
			}
			if _, ok := c.Uploaded(7); ok {
				t.Fatal("a refused upload was stored")
			}
		})
	}
}

// Nothing matching the paths: the runner's "No files to upload" error
// line, and success.
func TestArtifactsUploadNothing(t *testing.T) {
	c := startCoordinator(t)
	c.AddJob(8, "tok")
	out, code := helper(t, t.TempDir(), "artifacts-uploader", "--url", c.URL(), "--token", "tok", "--id", "8", "--path", "missing")
	if code != 0 || !strings.Contains(out, "ERROR: No files to upload") || c.UploadTries(8) != 0 {
		t.Fatalf("exit %d, %q, %d requests", code, out, c.UploadTries(8))
	}
}

// --untracked adds what `git ls-files -o` lists: the files git does not
// track, not the tracked ones.
func TestArchiveUntracked(t *testing.T) {
	wd := t.TempDir()
	writeTree(t, wd, map[string]string{"tracked.txt": "t", "new/untracked.txt": "u"})
	for _, args := range [][]string{{"init", "-q"}, {"add", "tracked.txt"}} {
		cmd := exec.CommandContext(t.Context(), "git", args...)
		cmd.Dir = wd
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	cacheFile := filepath.Join(t.TempDir(), "cache.zip")
	out, code := helper(t, wd, "cache-archiver", "--file", cacheFile, "--untracked")
	if code != 0 || !strings.Contains(out, "untracked: found 1 files") {
		t.Fatalf("cache-archiver --untracked: exit %d, %q", code, out)
	}
	zr, err := zip.OpenReader(cacheFile)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = zr.Close() }()
	if len(zr.File) != 1 || zr.File[0].Name != "new/untracked.txt" {
		var names []string
		for _, f := range zr.File {
			names = append(names, f.Name)
		}
		t.Fatalf("the archive holds %v, want new/untracked.txt alone", names)
	}
}
