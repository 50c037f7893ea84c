//go:build linux

package gitlab

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/gitlab/stage"
	"github.com/tether-ci/tether/internal/testing/attachserver"
	"github.com/tether-ci/tether/internal/testing/testbin"
)

// agentBins builds tether and tether-stage once for the agent's tests.
var agentBins = sync.OnceValues(func() (string, error) {
	dir := filepath.Join(binDir, "agent")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := testbin.Build(ctx, dir, "tether", testbin.Client); err != nil {
		return "", err
	}
	if _, err := testbin.BuildStage(ctx, dir); err != nil {
		return "", err
	}
	return dir, nil
})

// agentJob is one job's world for the agent's tests: an attach server
// with the job's pod (a real shim as its build container), a kubeconfig
// for it, the runner's environment, and a private temporary directory
// where the job's agent directory goes.
type agentJob struct {
	t         *testing.T
	bins, dir string
	env       []string
	flags     []string
	shim      *attachserver.Container
	srv       *attachserver.Server
}

func newAgentJob(t *testing.T) *agentJob {
	t.Helper()
	bins, err := agentBins()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := attachserver.Start(attachserver.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	shim, err := srv.AddContainer("ci", "tether-gitlab-r7-j5", kube.BuildContainer, podShim(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(shim.Kill)
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: ci}}]
current-context: c
`, srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	job := filepath.Join(dir, "job.json")
	if err := os.WriteFile(job, []byte(`{"id": 5, "image": {"name": "alpine:3"}, "runner_info": {"timeout": 600}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return &agentJob{t: t, bins: bins, dir: dir, shim: shim, srv: srv,
		flags: []string{"--kubeconfig", kc, "--gitlab-helper-image", "none"},
		env: append(os.Environ(), "TMPDIR="+tmp, "JOB_RESPONSE_FILE="+job,
			"BUILD_FAILURE_EXIT_CODE=41", "SYSTEM_FAILURE_EXIT_CODE=42",
			"CUSTOM_ENV_CI_RUNNER_ID=7", "CUSTOM_ENV_CI_JOB_ID=5"),
	}
}

// podRoot runs a command with a root of its own, as a container has one:
// a tmpfs with the host's system directories and the temporary directory
// bound in, and the pod's /tether/files (where the driver delivers stage
// scripts). It needs root, for the mount namespace.
const podRoot = `set -e
mount --make-rprivate /
root=$(mktemp -d)
mount -t tmpfs tmpfs "$root"
for d in bin sbin lib lib32 lib64 libx32 usr etc dev proc sys run tmp "$TMPDIR_HOST"; do
	[ -e "/$d" ] || continue
	if [ -L "/$d" ]; then ln -s "$(readlink "/$d")" "$root/$d"; continue; fi
	mkdir -p "$root/$d"
	mount --rbind "/$d" "$root/$d"
done
mkdir -p "$root/tether/files"
exec chroot "$root" "$@"
`

// podShim is tether-shim as the build container of a job's pod runs it
// (--files-dir /tether/files) in a root of its own (podRoot).
func podShim(t *testing.T) *exec.Cmd {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("this test needs root for a mount namespace, and CI runs as root")
		}
		t.Skip("needs root for a mount namespace (the pod's /tether/files)")
	}
	cmd := exec.Command("sh", "-c", podRoot, "sh", filepath.Join(binDir, "tether-shim"), "--spool-dir="+t.TempDir(), "--files-dir="+kube.FilesDir)
	cmd.Env = append(os.Environ(), "TMPDIR_HOST="+strings.TrimPrefix(os.TempDir(), "/"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// getenv looks key up in the job's environment.
func (j *agentJob) getenv(key string) string { return envOf(j.env)(key) }

// agentDir is the job's agent directory.
func (j *agentJob) agentDir() string {
	d, err := stage.Dir(j.getenv)
	if err != nil {
		j.t.Fatal(err)
	}
	return d
}

// startAgent starts `tether gitlab agent` as prepare does (its own
// session, a readiness pipe), with extra flags and environment, and
// waits until it listens. The test stops it at its end.
func (j *agentJob) startAgent(flags []string, env ...string) *exec.Cmd {
	j.t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		j.t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(filepath.Join(j.bins, "tether"), append(append([]string{"gitlab", "agent"}, j.flags...), flags...)...)
	cmd.Env = append(append(append([]string{}, j.env...), agentReadyVar+"=3"), env...)
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		j.t.Fatal(err)
	}
	w.Close()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	j.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	line, _ := bufio.NewReader(r).ReadString('\n')
	if line != "ready\n" {
		<-done
		j.t.Fatalf("agent said %q; stderr:\n%s", line, stderr.String())
	}
	return cmd
}

// script writes a stage script with body.
func (j *agentJob) script(name, body string) string {
	p := filepath.Join(j.dir, "script-"+name)
	if err := os.WriteFile(p, []byte("#!/usr/bin/env bash\n"+body), 0o700); err != nil {
		j.t.Fatal(err)
	}
	return p
}

// stageCmd is tether-stage for the stage with script, from bin (a
// directory holding tether-stage, with or without tether beside it).
func (j *agentJob) stageCmd(ctx context.Context, bin, script, name string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "tether-stage"), append(append([]string{}, j.flags...), script, name)...)
	cmd.Env, cmd.Dir = append(append([]string{}, j.env...), "BUILD_EXIT_CODE_FILE="+filepath.Join(j.dir, "exit-code")), j.dir
	return cmd
}

// stageOnly is a directory with tether-stage and no tether beside it (nor
// on PATH): a stage that runs there ran through the agent.
func (j *agentJob) stageOnly() string {
	j.t.Helper()
	dir := filepath.Join(j.dir, "stage-only")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		j.t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(j.bins, "tether-stage"))
	if err != nil {
		j.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tether-stage"), b, 0o755); err != nil {
		j.t.Fatal(err)
	}
	return dir
}

// withoutPath is env with PATH emptied (no tether to fall back to).
func withoutPath(cmd *exec.Cmd) {
	cmd.Env = append(cmd.Env, "PATH=/nonexistent")
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	t.Fatal(err)
	return -1
}

// Stages through the agent: output byte-exact, exit codes as the
// runner's contract says (a failing script: BUILD_FAILURE_EXIT_CODE with
// its code in BUILD_EXIT_CODE_FILE), the job's stages on one attach (the
// agent keeps the first stage's connection for the next ones); a kept
// connection that broke between stages is replaced by the next stage's
// own attach; and no `tether` is needed (none is there to fall back to).
func TestAgentRunsStages(t *testing.T) {
	j := newAgentJob(t)
	j.startAgent(nil)
	ctx := t.Context()
	bin := j.stageOnly()
	cmd := j.stageCmd(ctx, bin, j.script("a", "printf 'one\\n\\xff\\x00two'\necho ' end' >&2\n"), "step_script")
	withoutPath(cmd)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if code := exitCode(t, err); code != 0 || string(out) != "one\n\xff\x00two end\n" {
		t.Fatalf("stage: exit %d, stdout %q, stderr %q", code, out, stderr.String())
	}
	cmd = j.stageCmd(ctx, bin, j.script("b", "echo failing\nexit 3\n"), "step_script")
	withoutPath(cmd)
	out, err = cmd.Output()
	written, _ := os.ReadFile(filepath.Join(j.dir, "exit-code"))
	if code := exitCode(t, err); code != 41 || string(out) != "failing\n" || string(written) != "3" {
		t.Fatalf("failing stage: exit %d, stdout %q, BUILD_EXIT_CODE_FILE %q; want 41, failing, 3", code, out, written)
	}
	cmd = j.stageCmd(ctx, bin, j.script("c", "echo third\n"), "after_script")
	withoutPath(cmd)
	if out, err = cmd.Output(); exitCode(t, err) != 0 || string(out) != "third\n" {
		t.Fatalf("third stage: %v, stdout %q", err, out)
	}
	// Three stages, one attach: the first stage's, kept.
	if n := j.shim.Attaches(); n != 1 {
		t.Errorf("%d attaches for three stages, want 1 (the first stage's, kept for the next)", n)
	}
	// The kept connection breaks between stages: the next stage attaches
	// itself, and runs the same.
	if err := j.srv.SetNodeDown(true); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return j.shim.Attached() == 0 })
	if err := j.srv.SetNodeDown(false); err != nil {
		t.Fatal(err)
	}
	cmd = j.stageCmd(ctx, bin, j.script("d", "echo fourth\n"), "step_script")
	withoutPath(cmd)
	if out, err = cmd.Output(); exitCode(t, err) != 0 || string(out) != "fourth\n" {
		t.Fatalf("stage after the kept connection broke: %v, stdout %q", err, out)
	}
	if n := j.shim.Attaches(); n != 2 {
		t.Errorf("%d attaches after the kept connection broke, want 2", n)
	}
}

// waitUntil polls cond for up to 10 s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
	}
}

// Without an agent, tether-stage runs `tether gitlab run` (beside it): the
// stage runs the same, and a stage's unknown flag is reported as run
// reports it.
func TestStageWithoutAgentFallsBack(t *testing.T) {
	j := newAgentJob(t)
	ctx := t.Context()
	cmd := j.stageCmd(ctx, j.bins, j.script("a", "echo direct\n"), "step_script")
	out, err := cmd.Output()
	if code := exitCode(t, err); code != 0 || string(out) != "direct\n" {
		t.Fatalf("stage without agent: exit %d, stdout %q", code, out)
	}
	// Where there is no tether either, the stage is a system failure that
	// says so.
	cmd = j.stageCmd(ctx, j.stageOnly(), j.script("a", "echo direct\n"), "step_script")
	withoutPath(cmd)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	_, err = cmd.Output()
	if code := exitCode(t, err); code != 42 || !strings.Contains(stderr.String(), "no tether binary beside tether-stage") {
		t.Fatalf("no agent, no tether: exit %d, stderr %q", code, stderr.String())
	}
}

// The agent killed mid-stage: the stage process falls back to `tether
// gitlab run`, which follows the stage's job where the agent left it:
// the script ran once, its output arrived whole, none of it twice.
func TestAgentKilledMidStage(t *testing.T) {
	j := newAgentJob(t)
	agent := j.startAgent(nil)
	ctx := t.Context()
	runs := filepath.Join(j.dir, "runs")
	cmd := j.stageCmd(ctx, j.bins, j.script("a", "echo ran >> "+runs+"\necho one\nsleep 2\necho two\n"), "step_script")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(stdout)
	first, err := rd.ReadString('\n')
	if err != nil || first != "one\n" {
		t.Fatalf("first line %q: %v", first, err)
	}
	if err := agent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(rd)
	if code := exitCode(t, cmd.Wait()); code != 0 || string(rest) != "two\n" {
		t.Fatalf("after the agent's death: exit %d, rest of stdout %q; want 0, two", code, rest)
	}
	if b, _ := os.ReadFile(runs); string(b) != "ran\n" {
		t.Fatalf("the script ran %d times, want once", strings.Count(string(b), "ran"))
	}
}

// The runner's SIGTERM to the stage process cancels the agent's stage in
// band (TERM to the script, its output, the cancel said after it); its
// SIGKILL cancels the stage too, which nobody follows any more.
func TestAgentStageCancel(t *testing.T) {
	j := newAgentJob(t)
	j.startAgent(nil)
	ctx := t.Context()
	cmd := j.stageCmd(ctx, j.bins, j.script("a", "trap 'echo got TERM; exit 143' TERM\necho started\nsleep 300 &\nwait\n"), "build_script")
	var merged strings.Builder
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); pw.Close() }()
	rd := bufio.NewReader(pr)
	if line, err := rd.ReadString('\n'); err != nil || line != "started\n" {
		t.Fatalf("first line %q: %v", line, err)
	}
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, err := rd.WriteTo(&merged); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(sent); took > 20*time.Second {
		t.Fatalf("the stage took %v after SIGTERM", took)
	}
	for _, want := range []string{"got TERM\n", "WARNING: tether: stage build_script was cancelled (received SIGTERM): its script was stopped and ended with exit code 143"} {
		if !strings.Contains(merged.String(), want) {
			t.Fatalf("after SIGTERM: %q; want %q", merged.String(), want)
		}
	}
	if cmd.ProcessState.ExitCode() != 41 {
		t.Fatalf("exit %d after the cancel, want the build failure 41", cmd.ProcessState.ExitCode())
	}

	// SIGKILL: the agent stops the stage's script itself.
	marker := filepath.Join(j.dir, "termed")
	cmd = j.stageCmd(ctx, j.bins, j.script("b", "trap 'echo > "+marker+"; exit 143' TERM\necho started\nsleep 300 &\nwait\n"), "build_script")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "started\n" {
		t.Fatalf("first line %q: %v", line, err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the script did not get TERM after its stage process was killed")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitExit waits up to d for cmd (started by startAgent) to end.
func waitExit(t *testing.T, cmd *exec.Cmd, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for syscall.Kill(cmd.Process.Pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the agent (pid %d) still runs after %v", cmd.Process.Pid, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The agent never outlives its job: it ends at cleanup's quit, when the
// runner's process ends, and when idle; and it removes its directory.
func TestAgentEnds(t *testing.T) {
	t.Run("cleanup", func(t *testing.T) {
		j := newAgentJob(t)
		cmd := j.startAgent(nil)
		stopAgent(j.getenv, slog.New(slog.DiscardHandler))
		waitExit(t, cmd, 5*time.Second)
		if _, err := os.Lstat(j.agentDir()); !os.IsNotExist(err) {
			t.Fatalf("the agent's directory is left: %v", err)
		}
	})
	t.Run("runner gone", func(t *testing.T) {
		j := newAgentJob(t)
		runner := exec.Command("sleep", "60")
		if err := runner.Start(); err != nil {
			t.Fatal(err)
		}
		cmd := j.startAgent(nil, fmt.Sprintf("%s=%d", agentRunnerVar, runner.Process.Pid))
		time.Sleep(300 * time.Millisecond)
		if syscall.Kill(cmd.Process.Pid, 0) != nil {
			t.Fatal("the agent ended while its runner runs")
		}
		_ = runner.Process.Kill()
		_ = runner.Wait()
		waitExit(t, cmd, 5*time.Second)
		if _, err := os.Lstat(j.agentDir()); !os.IsNotExist(err) {
			t.Fatalf("the agent's directory is left: %v", err)
		}
	})
	t.Run("idle", func(t *testing.T) {
		j := newAgentJob(t)
		cmd := j.startAgent([]string{"--idle-timeout", "1s"})
		waitExit(t, cmd, 10*time.Second)
	})
}

// A `tether gitlab run` that is the runner's run_exec itself ends the
// agent prepare started (no stage would reach it); one that a stage
// process fell back to (the agent declined the stage: its settings
// differ) leaves it serving.
func TestAgentEndsWhenRunExecIsRun(t *testing.T) {
	j := newAgentJob(t)
	agent := j.startAgent(nil)
	ctx := t.Context()
	// The stage names the kubeconfig's context, the agent none: the agent
	// declines, tether-stage falls back to `tether gitlab run`.
	cmd := j.stageCmd(ctx, j.bins, j.script("a", "echo declined\n"), "step_script")
	cmd.Args = append(cmd.Args[:1], append([]string{"--context", "c"}, cmd.Args[1:]...)...)
	if out, err := cmd.Output(); exitCode(t, err) != 0 || string(out) != "declined\n" {
		t.Fatalf("declined stage: %v, stdout %q", err, out)
	}
	time.Sleep(200 * time.Millisecond)
	if syscall.Kill(agent.Process.Pid, 0) != nil {
		t.Fatal("the agent ended after a stage process fell back to tether gitlab run")
	}
	run := exec.CommandContext(ctx, filepath.Join(j.bins, "tether"), append(append([]string{"gitlab", "run"}, j.flags...), j.script("b", "echo direct\n"), "step_script")...)
	run.Env, run.Dir = j.env, j.dir
	if out, err := run.Output(); exitCode(t, err) != 0 || string(out) != "direct\n" {
		t.Fatalf("tether gitlab run: %v, stdout %q", err, out)
	}
	waitExit(t, agent, 5*time.Second)
	if _, err := os.Lstat(j.agentDir()); !os.IsNotExist(err) {
		t.Fatalf("the agent's directory is left: %v", err)
	}
}
