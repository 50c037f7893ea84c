//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-ci/tether/integration/gitlab/stage"
	"github.com/tether-ci/tether/internal/testing/testbin"
)

// tetherStageCLI builds tether-stage once per test process, beside the
// tether CLI (where it finds tether to fall back to), as `make build` does:
// the C build when a C compiler is found (in CI, always).
var tetherStageCLI = sync.OnceValues(func() (string, error) {
	cli, err := tetherCLI()
	if err != nil {
		return "", err
	}
	return testbin.BuildStage(context.Background(), filepath.Dir(cli))
})

// stageOnly returns a directory holding a copy of tether-stage and no
// tether: a stage it runs can only have run through the job's agent.
func stageOnly(t *testing.T) string {
	t.Helper()
	bin, err := tetherStageCLI()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tether-stage"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// stageCmd is run_exec `tether-stage` (in dir: the one beside tether when
// dir is "") for a user stage whose commands are body, with the stand-in's
// environment and BUILD_EXIT_CODE_FILE.
func (r *runnerStandIn) stageCmd(dir, stageName, body string) (*exec.Cmd, string) {
	r.t.Helper()
	bin := filepath.Join(dir, "tether-stage")
	if dir == "" {
		var err error
		if bin, err = tetherStageCLI(); err != nil {
			r.t.Fatal(err)
		}
	}
	codeFile := filepath.Join(r.dir, "exit-code-"+stageName)
	_ = os.Remove(codeFile)
	cmd := exec.CommandContext(r.t.Context(), bin, r.stageScript(stageName, body, nil), stageName)
	cmd.Env, cmd.Dir = append(append([]string{}, r.env...), "BUILD_EXIT_CODE_FILE="+codeFile), r.dir
	if dir != "" {
		cmd.Env = append(cmd.Env, "PATH=/nonexistent")
	}
	return cmd, codeFile
}

// agentPID is the process ID of the job's agent, from its socket's peer
// credentials; 0 when none listens.
func (r *runnerStandIn) agentPID() int {
	r.t.Helper()
	dir, err := stage.Dir(func(k string) string { return envValue(r.env, k) })
	if err != nil {
		r.t.Fatal(err)
	}
	c, err := net.Dial("unix", filepath.Join(dir, stage.SocketName))
	if err != nil {
		return 0
	}
	defer c.Close()
	raw, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		r.t.Fatal(err)
	}
	var cred *unix.Ucred
	_ = raw.Control(func(fd uintptr) { cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
	if err != nil {
		r.t.Fatal(err)
	}
	return int(cred.Pid)
}

// envValue is the last value of key in env (KEY=VALUE).
func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// TestGitLabAgentJob: with run_exec tether-stage, a job's stages run
// through the agent prepare started (a tether-stage with no tether to
// fall back to runs them): output byte-exact with masking, a failing
// script a build failure with its code, SIGTERM a cancel in band; after
// cleanup the agent is gone and its directory removed.
func TestGitLabAgentJob(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "gitlab-agent")
	const secret = "gl-agent-masked-4711"
	r := newRunnerStandIn(t, c, ns, []map[string]any{{"key": "DEPLOY_TOKEN", "value": secret, "masked": true}})
	r.prepare(t.Context())
	pid := r.agentPID()
	if pid == 0 {
		t.Fatal("prepare started no agent")
	}
	only := stageOnly(t)

	cmd, _ := r.stageCmd(only, "step_script", "printf 'a\\tb'; sleep 0.2; echo \" token=$DEPLOY_TOKEN\"\n")
	out, err := cmd.Output()
	if err != nil || string(out) != "a\tb token=[MASKED]\n" {
		t.Fatalf("step_script through the agent: %v, output %q", err, out)
	}
	cmd, codeFile := r.stageCmd(only, "build_script", "echo building\nexit 3\n")
	out, err = cmd.Output()
	written, _ := os.ReadFile(codeFile)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != standInBuildFailure || string(written) != "3" || string(out) != "building\n" {
		t.Fatalf("build_script: %v, BUILD_EXIT_CODE_FILE %q, output %q; want exit %d, 3, building", err, written, out, standInBuildFailure)
	}

	// The runner's SIGTERM reaches the agent's stage.
	cmd, _ = r.stageCmd(only, "after_script", "trap 'echo got TERM; exit 143' TERM\necho started\nsleep 300 &\nwait\n")
	rd := bufio.NewReader(runMerged(t, cmd))
	if line, err := rd.ReadString('\n'); err != nil || line != "started\n" {
		t.Fatalf("first line %q: %v", line, err)
	}
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(rd)
	_ = cmd.Wait()
	t.Logf("the cancelled stage ended %v after SIGTERM: %q", time.Since(sent), rest)
	if !strings.Contains(string(rest), "got TERM\n") || !strings.Contains(string(rest), "stage after_script was cancelled (received SIGTERM)") {
		t.Fatalf("after SIGTERM: %q", rest)
	}

	r.cleanup(t.Context())
	if !processEnded(pid, 5*time.Second) {
		t.Fatalf("the agent (pid %d) runs on after cleanup", pid)
	}
	dir, _ := stage.Dir(func(k string) string { return envValue(r.env, k) })
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Fatalf("the agent's directory is left after cleanup: %v", err)
	}
	waitNoTetherObjects(t.Context(), t, c, ns, 60*time.Second)
}

// TestGitLabAgentKilled: the agent SIGKILLed in the middle of a stage:
// that stage's process follows the stage with `tether gitlab run` (its
// output whole, the script run once), the next stage runs without an
// agent, and the job passes.
func TestGitLabAgentKilled(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "gitlab-agent-kill")
	r := newRunnerStandIn(t, c, ns, nil)
	r.prepare(t.Context())
	pid := r.agentPID()
	if pid == 0 {
		t.Fatal("prepare started no agent")
	}
	cmd, _ := r.stageCmd("", "step_script", "echo \"run $RANDOM\" >> /builds/runs\necho one\nsleep 3\necho two\n")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(stdout)
	if line, err := rd.ReadString('\n'); err != nil || line != "one\n" {
		t.Fatalf("first line %q: %v", line, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(rd)
	if err := cmd.Wait(); err != nil || string(rest) != "two\n" {
		t.Fatalf("the stage after its agent died: %v, rest of its output %q; want two", err, rest)
	}
	cmd, _ = r.stageCmd("", "cleanup_file_variables", "cat /builds/runs\n")
	out, err := cmd.Output()
	if err != nil || strings.Count(string(out), "run ") != 1 {
		t.Fatalf("the next stage, without an agent: %v, output %q; want the script run once", err, out)
	}
	r.cleanup(t.Context())
	waitNoTetherObjects(t.Context(), t, c, ns, 60*time.Second)
}

// processEnded reports whether process pid ended within d: it is gone, or
// a zombie its new parent has not reaped yet.
func processEnded(pid int, d time.Duration) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		// pid (comm) STATE ...: comm may hold spaces, the state follows its ')'.
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && strings.HasPrefix(string(b[i+1:]), " Z") {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}
