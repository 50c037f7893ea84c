//go:build e2e

package e2e

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gitHTTPServer serves the repositories under root over git's smart HTTP
// protocol (git http-backend, as a CGI program) on 127.0.0.1, and returns
// its base URL.
func gitHTTPServer(t *testing.T, root string) string {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git is needed to serve a repository: %v (apt-get install git)", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &cgi.Handler{Path: git, Args: []string{"http-backend"}, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// gitRepo makes a bare repository root/NAME.git with one commit holding
// README, and returns the commit's SHA.
func gitRepo(t *testing.T, root, name, readme string) string {
	t.Helper()
	work := t.TempDir()
	git := func(dir string, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "HOME="+work)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git(work, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(work, "README"), []byte(readme), 0o644); err != nil {
		t.Fatal(err)
	}
	git(work, "add", "README")
	git(work, "commit", "-q", "-m", "first")
	git(work, "clone", "-q", "--bare", work, filepath.Join(root, name+".git"))
	return git(work, "rev-parse", "HEAD")
}

// TestGitLabDriverGetSources: get_sources runs in the helper container
// (git is in the helper image, not in the build image) and fetches a
// repository over git's HTTP protocol from 127.0.0.1 (the pod is put on
// the host's network by a pod patch in the driver config: a test-only
// setting); build_script, in the build container, reads the checked-out
// file from the shared builds volume.
func TestGitLabDriverGetSources(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-git")
	root := t.TempDir()
	sha := gitRepo(t, root, "project", "from-the-repository\n")
	url := gitHTTPServer(t, root) + "/project.git"
	patch := filepath.Join(t.TempDir(), "host-network.yaml")
	if err := os.WriteFile(patch, []byte("spec:\n  hostNetwork: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := newRunnerStandInJob(t, c, ns, standInJob{Config: "pod-patch: " + patch + "\n"})
	r.prepare(ctx)
	vars := map[string]string{"CI_REPOSITORY_URL": url, "CI_COMMIT_SHA": sha}
	// Shaped like the runner's get_sources: fetch into the builds dir,
	// check the commit out, clean.
	got, code, _ := r.run(ctx, "get_sources", `echo "Fetching changes with git depth set to 20..."
git init -q .
git remote add origin "$CI_REPOSITORY_URL"
git fetch -q origin '+refs/heads/*:refs/remotes/origin/*'
echo "Checking out ${CI_COMMIT_SHA:0:8} as detached HEAD..."
git -c advice.detachedHead=false checkout -f -q "$CI_COMMIT_SHA"
git clean -ffdx
`, vars)
	if code != 0 {
		t.Fatalf("get_sources: exit %d, output %q", code, got)
	}
	want := "Fetching changes with git depth set to 20...\nChecking out " + sha[:8] + " as detached HEAD...\n"
	if got != want {
		t.Fatalf("get_sources output %q, want %q", got, want)
	}
	got, code, _ = r.run(ctx, "build_script", "cat README\nif command -v git >/dev/null; then echo 'git in the build image'; fi\n", nil)
	if code != 0 || got != "from-the-repository\n" {
		t.Fatalf("build_script: exit %d, output %q; want the repository's README (and no git in the build image)", code, got)
	}
	// A stage name the driver does not know runs in the build container,
	// with a warning.
	got, code, _ = r.run(ctx, "step_release_notes", "cat README\nif command -v git >/dev/null; then echo 'git here'; fi\n", nil)
	if code != 0 || got != "from-the-repository\n" || strings.Contains(r.stderr, "unknown stage") {
		t.Fatalf("a user step: exit %d, output %q, stderr %q", code, got, r.stderr)
	}
	got, code, _ = r.run(ctx, "stage_from_the_future", "cat README\nif command -v git >/dev/null; then echo 'git here'; fi\n", nil)
	if code != 0 || got != "from-the-repository\n" || !strings.Contains(r.stderr, "unknown stage") || !strings.Contains(r.stderr, "stage_from_the_future") {
		t.Fatalf("an unknown stage: exit %d, output %q, stderr %q; want it run in the build container with a warning", code, got, r.stderr)
	}
	r.cleanup(ctx)
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}

// TestGitLabDriverService: a job's service (busybox httpd, entrypoint and
// command from the job) is reachable from build_script under its alias;
// the stage's exit code is the script's.
func TestGitLabDriverService(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-svc")
	r := newRunnerStandInJob(t, c, ns, standInJob{Services: []map[string]any{{
		"name":       BusyboxImage,
		"alias":      "web",
		"entrypoint": []string{"sh", "-c"},
		"command":    []string{"mkdir -p /tmp/www && echo service-says-hi > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www"},
	}}})
	r.prepare(ctx)
	got, code, written := r.run(ctx, "build_script", `for i in $(seq 1 30); do
  if body=$(wget -q -O - http://web:8080/index.html 2>/dev/null); then echo "$body"; exit 4; fi
  sleep 1
done
echo "the service never answered"
exit 9
`, nil)
	if code != standInBuildFailure || written != "4" || got != "service-says-hi\n" {
		t.Fatalf("build_script: exit %d, BUILD_EXIT_CODE_FILE %q, output %q; want %d, 4 and the service's page", code, written, got, standInBuildFailure)
	}
	r.cleanup(ctx)
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}

// TestGitLabDriverTimeout: a job whose timeout is shorter than its script
// is stopped in band by the shim at the deadline: run exits long before the
// script would have, as a build failure saying the timeout passed, and
// cleanup leaves nothing.
func TestGitLabDriverTimeout(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-timeout")
	r := newRunnerStandInJob(t, c, ns, standInJob{Timeout: 25 * time.Second})
	r.prepare(ctx)
	start := time.Now()
	runCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	got, code, written := r.run(runCtx, "build_script", "echo started\nsleep 600\necho not-reached\n", nil)
	took := time.Since(start)
	t.Logf("build_script ended after %v: exit %d, BUILD_EXIT_CODE_FILE %q, output %q", took, code, written, got)
	if code != standInBuildFailure || written == "" || written == "0" {
		t.Fatalf("exit %d, BUILD_EXIT_CODE_FILE %q; want a build failure with the script's code", code, written)
	}
	if !strings.HasPrefix(got, "started\n") || strings.Contains(got, "not-reached") || !strings.Contains(got, "timeout (25s) passed") {
		t.Fatalf("output %q: want the script's start and the timeout message", got)
	}
	if took > 2*time.Minute {
		t.Fatalf("the stage ran %v: the job's timeout did not stop it", took)
	}
	// The shim ended with the deadline: a later stage is a system failure.
	got, code, _ = r.run(runCtx, "after_script", "echo after\n", nil)
	// No script ran and no earlier stage's output is replayed: the job log
	// holds only the driver's own WARNING/ERROR lines.
	if code != standInSystemFailure || strings.Contains(got, "after\n") || strings.Contains(got, "started") {
		t.Fatalf("after_script after the timeout: exit %d, output %q; want a system failure", code, got)
	}
	for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		if line != "" && !strings.HasPrefix(line, "WARNING: tether: ") && !strings.HasPrefix(line, "ERROR: tether: ") {
			t.Fatalf("after_script after the timeout: output line %q is not the driver's", line)
		}
	}
	r.cleanup(ctx)
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}

// TestGitLabDriverPrepareFails: a job image that cannot be pulled is a
// system failure of prepare whose output (the job log) names the image and
// the reason; cleanup leaves nothing.
func TestGitLabDriverPrepareFails(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-pull")
	r := newRunnerStandInJob(t, c, ns, standInJob{Image: "localhost/tether/no-such-image:1"})
	out, err := r.command(ctx, "prepare").CombinedOutput()
	t.Logf("prepare:\n%s", out)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != standInSystemFailure {
		t.Fatalf("prepare: %v; want exit code %d (system failure)", err, standInSystemFailure)
	}
	if !strings.Contains(string(out), "ERROR: tether:") || !strings.Contains(string(out), "localhost/tether/no-such-image:1") || !strings.Contains(string(out), "ErrImageNeverPull") {
		t.Fatalf("prepare's output does not say which image cannot be pulled and why")
	}
	r.cleanup(ctx)
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}

// TestGitLabDriverSurvivesConnectionCuts: every connection of a `tether
// gitlab run` to the API server goes through a proxy that cuts them all 20
// times during the stage; the job log (run's stdout) still holds every
// line exactly once and in order, and the script's own exit code reaches
// BUILD_EXIT_CODE_FILE.
func TestGitLabDriverSurvivesConnectionCuts(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-cuts")
	r := newRunnerStandIn(t, c, ns, nil)
	r.prepare(ctx)

	proxied, proxy := proxiedKubeconfig(t, c)

	script, want := steadyScript(400, "0.05", 9)
	codeFile := filepath.Join(t.TempDir(), "exit-code")
	// A flag on the command line wins over the config file's kubeconfig.
	cmd := r.command(ctx, "run", "--kubeconfig", proxied, r.stageScript("build_script", script, nil), "build_script")
	cmd.Env = append(cmd.Env, "BUILD_EXIT_CODE_FILE="+codeFile)
	out := &safeBuffer{}
	cmd.Stdout, cmd.Stderr = out, out // one pipe, as the runner's
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cutsDone := cutRepeatedly(ctx, proxy, func() bool { return out.Len() > 0 }, 20, 300*time.Millisecond)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != standInBuildFailure {
		t.Fatalf("run: %v; want the build failure code %d", err, standInBuildFailure)
	}
	hits := <-cutsDone
	got := string(out.Bytes())
	if !strings.HasPrefix(got, want) {
		t.Fatalf("the job log differs after %d cuts: got %d bytes, want %d and the driver's lines", hits, len(got), len(want))
	}
	// The script's output, then the driver's lines: the reconnects, once.
	lines := driverLines(t, got[len(want):])
	t.Logf("the driver's lines after the output: %q", lines)
	if written, _ := os.ReadFile(codeFile); string(written) != "9" {
		t.Fatalf("BUILD_EXIT_CODE_FILE %q, want 9", written)
	}
	if hits < 20 {
		t.Fatalf("the stage ended after only %d cuts; make it longer", hits)
	}
	// A cut while the session reconnects (its pod read, its back-off, the
	// attach's upgrade) breaks no attach: on a loaded machine a reconnect
	// takes longer than the 300 ms between cuts, so only some of them hit.
	if len(lines) != 1 || reconnectCount(lines[0]) < 3 {
		t.Fatalf("%d cuts, the driver's lines %q: want one saying the connection broke at least 3 times (else the cuts missed the attach)", hits, lines)
	}
	t.Logf("%d cuts, %d bytes exact", hits, len(want))
	r.cleanup(ctx)
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}

// TestGitLabDriverAfterScriptTimeout: after_script gets its own timeout
// from the job's RUNNER_AFTER_SCRIPT_TIMEOUT, enforced by the shim in band:
// an after_script that would sleep for ten minutes is stopped after 3 s as
// a build failure whose log says so, and the pod serves the next stage.
func TestGitLabDriverAfterScriptTimeout(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-after")
	r := newRunnerStandInJob(t, c, ns, standInJob{Variables: []map[string]any{
		{"key": "RUNNER_AFTER_SCRIPT_TIMEOUT", "value": "3s", "masked": false},
	}})
	r.prepare(ctx)
	runCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	start := time.Now()
	got, code, written := r.run(runCtx, "after_script", "trap 'echo got TERM; exit 143' TERM\necho started\nsleep 600 &\nwait\necho not-reached\n", nil)
	t.Logf("after_script ended after %v: exit %d, BUILD_EXIT_CODE_FILE %q, output %q", time.Since(start), code, written, got)
	if code != standInBuildFailure || written != "143" {
		t.Fatalf("after_script: exit %d, BUILD_EXIT_CODE_FILE %q; want a build failure with 143 (stopped by TERM)", code, written)
	}
	if !strings.HasPrefix(got, "started\ngot TERM\n") || strings.Contains(got, "not-reached") ||
		!strings.Contains(got, "the after_script timeout (3s, RUNNER_AFTER_SCRIPT_TIMEOUT) passed: stage after_script was stopped") {
		t.Fatalf("after_script output %q: want its start, the TERM and the timeout message", got)
	}
	got, code, _ = r.run(ctx, "cleanup_file_variables", "echo still-serving\n", nil)
	if code != 0 || got != "still-serving\n" {
		t.Fatalf("the stage after a timed-out after_script: exit %d, output %q", code, got)
	}
	r.cleanup(ctx)
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}
