//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/integration/gitlab/stage"
)

// The faults of a job whose stages run through the stage agent
// (run_exec tether-stage), on the real node. Every stage process here is
// a tether-stage with no tether beside it nor on PATH: a stage that did
// not run through the agent fails.

// proxyJob makes the stand-in's job reach the API server through a fault
// proxy: its config file's kubeconfig (prepare's, the agent's, every
// stage's) is the proxied one.
func (r *runnerStandIn) proxyJob(kubeconfig string) {
	r.t.Helper()
	cfg := filepath.Join(r.dir, "tether.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "kubeconfig: ") {
			l = "kubeconfig: " + kubeconfig
		}
		lines = append(lines, l)
	}
	if err := os.WriteFile(cfg, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		r.t.Fatal(err)
	}
}

// runnerSignal signals the stage process's process group, as GitLab
// Runner's process killer does (helpers/process: kill(-pid, sig); the
// runner starts run_exec in a process group of its own).
func runnerSignal(t *testing.T, cmd *exec.Cmd, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil {
		t.Fatalf("signal the stage's process group: %v", err)
	}
}

// TestGitLabAgentSurvivesConnectionCuts: every connection of the job to
// the API server (the agent's kept attach included) goes through a proxy
// that cuts them all 20 times during a stage: the stage's output arrives
// whole, once and in order, its exit code reaches BUILD_EXIT_CODE_FILE,
// the job log says the connection broke; the next stage runs through the
// agent as before.
func TestGitLabAgentSurvivesConnectionCuts(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-agent-cuts")
	r := newRunnerStandIn(t, c, ns, nil)
	proxied, proxy := proxiedKubeconfig(t, c)
	r.proxyJob(proxied)
	r.prepare(ctx)
	only := stageOnly(t)
	cmd, _ := r.stageCmd(only, "prepare_script", "echo first\n")
	if out, err := cmd.Output(); err != nil || string(out) != "first\n" {
		t.Fatalf("first stage: %v, output %q", err, out)
	}

	script, want := steadyScript(400, "0.05", 9)
	cmd, codeFile := r.stageCmd(only, "build_script", script)
	out := &safeBuffer{}
	cmd.Stdout, cmd.Stderr = out, out // one pipe, as the runner's
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cutsDone := cutRepeatedly(ctx, proxy, func() bool { return out.Len() > 0 }, 20, 300*time.Millisecond)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != standInBuildFailure {
		t.Fatalf("stage: %v; want the build failure code %d; job log tail %q", err, standInBuildFailure, tail(out.Bytes()))
	}
	hits := <-cutsDone
	got := string(out.Bytes())
	if !strings.HasPrefix(got, want) {
		t.Fatalf("the job log differs after %d cuts: got %d bytes, want %d and the driver's lines", hits, len(got), len(want))
	}
	lines := driverLines(t, got[len(want):])
	t.Logf("%d cuts; the driver's lines after the output: %q", hits, lines)
	if written, _ := os.ReadFile(codeFile); string(written) != "9" {
		t.Fatalf("BUILD_EXIT_CODE_FILE %q, want 9", written)
	}
	if hits < 20 {
		t.Fatalf("the stage ended after only %d cuts; make it longer", hits)
	}
	if len(lines) != 1 || reconnectCount(lines[0]) < 3 {
		t.Fatalf("%d cuts, the driver's lines %q: want one saying the connection broke at least 3 times", hits, lines)
	}
	cmd, _ = r.stageCmd(only, "after_script", "echo after\n")
	if out, err := cmd.Output(); err != nil || string(out) != "after\n" {
		t.Fatalf("the stage after the cuts: %v, output %q", err, out)
	}
	r.cleanup(ctx)
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}

// tail is the last 300 bytes of b.
func tail(b []byte) string {
	return string(b[max(0, len(b)-300):])
}

// TestGitLabAgentPodDeleted: the job's pod is deleted while a stage runs
// through the agent: the stage is a system failure within seconds, with
// the driver's ERROR line after the script's output; cleanup then ends
// the agent and finds the pod gone.
func TestGitLabAgentPodDeleted(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-agent-podgone")
	r := newRunnerStandIn(t, c, ns, nil)
	r.prepare(ctx)
	pid := r.agentPID()
	if pid == 0 {
		t.Fatal("prepare started no agent")
	}
	cmd, _ := r.stageCmd(stageOnly(t), "step_script", "echo started\nsleep 300\n")
	rd := bufio.NewReader(runMerged(t, cmd))
	if line, err := rd.ReadString('\n'); err != nil || line != "started\n" {
		t.Fatalf("first line %q: %v", line, err)
	}
	name := "tether-gitlab-r7-j" + r.jobID
	deleted := time.Now()
	if err := c.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod %s/%s: %v", ns, name, err)
	}
	rest := readAll(rd)
	err := cmd.Wait()
	took := time.Since(deleted)
	t.Logf("the stage ended %v after the pod's delete: %v; rest of the job log %q", took, err, rest)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != standInSystemFailure {
		t.Fatalf("stage: %v; want the system failure code %d", err, standInSystemFailure)
	}
	if !strings.Contains(rest, "ERROR: tether: stage step_script in pod "+ns+"/"+name) {
		t.Fatalf("the job log after the delete: %q; want the driver's ERROR line naming the stage and pod", rest)
	}
	// The pod's grace (30 s) bounds its containers' end; the stage ends
	// with the shim's, not at a timeout of the driver's.
	if took > 40*time.Second {
		t.Fatalf("the stage took %v after the pod's delete", took)
	}
	r.cleanup(ctx)
	if !processEnded(pid, 5*time.Second) {
		t.Fatalf("the agent (pid %d) runs on after cleanup", pid)
	}
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}

// readAll reads rd to its end.
func readAll(rd *bufio.Reader) string {
	var b strings.Builder
	_, _ = rd.WriteTo(&b)
	return b.String()
}

// TestGitLabAgentStageKilled: the runner cancels a stage whose script
// ignores TERM, as GitLab Runner does on a cancel or timeout: SIGTERM to
// the stage process's group, then, after its grace, SIGKILL. The agent
// cancels the stage in band at the SIGTERM and, once nobody follows it,
// still stops it: the script is killed, the agent runs the next stage,
// and the script's output stopped.
func TestGitLabAgentStageKilled(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-agent-killed")
	r := newRunnerStandIn(t, c, ns, nil)
	r.prepare(ctx)
	only := stageOnly(t)
	cmd, _ := r.stageCmd(only, "build_script", "trap '' TERM\necho started\ni=0\nwhile :; do i=$((i+1)); echo $i > /builds/beat; sleep 0.1; done\n")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	rd := bufio.NewReader(runMerged(t, cmd))
	if line, err := rd.ReadString('\n'); err != nil || line != "started\n" {
		t.Fatalf("first line %q: %v", line, err)
	}
	runnerSignal(t, cmd, syscall.SIGTERM)
	time.Sleep(time.Second) // the runner's graceful_kill_timeout, short
	runnerSignal(t, cmd, syscall.SIGKILL)
	_ = cmd.Wait()
	killed := time.Now()
	// The agent runs one stage at a time: this one starts once the killed
	// stage's script was stopped.
	cmd, _ = r.stageCmd(only, "after_script", "a=$(cat /builds/beat); sleep 1; b=$(cat /builds/beat); [ \"$a\" = \"$b\" ] && echo stopped || echo still beating\n")
	out, err := cmd.Output()
	t.Logf("the next stage ran %v after the SIGKILL: %v, %q", time.Since(killed), err, out)
	if err != nil || string(out) != "stopped\n" {
		t.Fatalf("the next stage: %v, output %q; want the killed stage's script stopped", err, out)
	}
	r.cleanup(ctx)
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}

// TestGitLabAgentEndsWithTheRunner: the runner's process (the one that
// ran prepare) dies without cleanup: the agent ends within moments and
// removes its directory.
func TestGitLabAgentEndsWithTheRunner(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-agent-runner")
	r := newRunnerStandIn(t, c, ns, nil)
	// A runner process of its own: a shell that runs prepare and stays.
	runner := exec.CommandContext(ctx, "sh", "-c", `"$0" gitlab prepare && echo prepared && exec sleep 600`, r.bin)
	runner.Env, runner.Dir = r.env, r.dir
	runner.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	rd := bufio.NewReader(runMerged(t, runner))
	t.Cleanup(func() { r.cleanup(context.Background()) })
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("prepare ended without success: %v", err)
		}
		if line == "prepared\n" {
			break
		}
	}
	pid := r.agentPID()
	if pid == 0 {
		t.Fatal("prepare started no agent")
	}
	runnerSignal(t, runner, syscall.SIGKILL)
	_ = runner.Wait()
	if !processEnded(pid, 5*time.Second) {
		t.Fatalf("the agent (pid %d) runs on after its runner died", pid)
	}
	dir, err := stage.Dir(func(k string) string { return envValue(r.env, k) })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Fatalf("the agent's directory is left after its runner died: %v", err)
	}
}
