//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// runnerStandIn calls `tether gitlab` the way GitLab Runner's Custom
// executor calls a driver (executors/custom in the runner's source): each
// stage is a new process given `<script file> <stage>`, job variables as
// CUSTOM_ENV_*, the job response in JOB_RESPONSE_FILE, the exit-code
// contract in BUILD_FAILURE_EXIT_CODE / SYSTEM_FAILURE_EXIT_CODE /
// BUILD_EXIT_CODE_FILE, and a directory of its own as the working
// directory. No GitLab Runner binary can be built here (some of its
// dependencies are not on the module proxy), so this stand-in follows its
// source instead.
type runnerStandIn struct {
	t     *testing.T
	bin   string
	dir   string
	env   []string
	jobID string
	// job is what the stage scripts are generated from (gitlab_scripts_test.go).
	job runnerJob
	// stderr is what the last run wrote to its stderr.
	stderr string
}

// The exit codes the stand-in hands the driver (the runner's defaults).
const (
	standInBuildFailure  = 1
	standInSystemFailure = 2
)

// standInJob is what a test changes in the stand-in's job.
type standInJob struct {
	// Variables are the job's variables (key, value, masked).
	Variables []map[string]any
	// Services are the job's services (name, alias, entrypoint, command).
	Services []map[string]any
	// Timeout is the job's timeout (default 10 minutes).
	Timeout time.Duration
	// Config is added to the driver's config file.
	Config string
	// Image is the job's image (default BashImage).
	Image string
	// GitLabHelperImage is the driver's gitlab-helper-image (default GitImage).
	GitLabHelperImage string
	// ID is the job's ID (default: from the clock).
	ID int64
	// URL is the GitLab instance the job's artifacts go to (a
	// gitlabcoord.Coordinator's URL); empty skips the artifact stages.
	URL string
	// Name and Ref are the job's name and git ref (the default cache key).
	Name, Ref string
	// Caches, Artifacts and Dependencies are the job's `cache:`,
	// `artifacts:` and the jobs whose artifacts it downloads.
	Caches       []runnerCache
	Artifacts    []runnerArtifact
	Dependencies []runnerDependency
}

// standInToken is the job token of job id (CI_JOB_TOKEN, the `token` of the
// job response).
func standInToken(id int64) string { return fmt.Sprintf("standin-job-token-%d", id) }

func newRunnerStandIn(t *testing.T, c *Cluster, ns string, variables []map[string]any) *runnerStandIn {
	return newRunnerStandInJob(t, c, ns, standInJob{Variables: variables})
}

func newRunnerStandInJob(t *testing.T, c *Cluster, ns string, sj standInJob) *runnerStandIn {
	t.Helper()
	dir := t.TempDir()
	id := sj.ID
	if id == 0 {
		id = time.Now().UnixNano() % 1_000_000_000
	}
	jobID := fmt.Sprint(id)
	if sj.Name == "" {
		sj.Name = "test"
	}
	if sj.Ref == "" {
		sj.Ref = "main"
	}
	if sj.Timeout == 0 {
		sj.Timeout = 10 * time.Minute
	}
	if sj.Image == "" {
		sj.Image = BashImage
	}
	if sj.GitLabHelperImage == "" {
		sj.GitLabHelperImage = GitImage
	}
	// The runner's common.JobResponse (common/network.go), as much of it
	// as the driver and these tests read.
	job := map[string]any{
		"id":           id,
		"token":        standInToken(id),
		"image":        map[string]any{"name": sj.Image},
		"variables":    sj.Variables,
		"services":     sj.Services,
		"runner_info":  map[string]any{"timeout": int(sj.Timeout.Seconds())},
		"job_info":     map[string]any{"id": id, "name": sj.Name, "project_id": 42},
		"git_info":     map[string]any{"ref": sj.Ref, "repo_url": "", "sha": ""},
		"cache":        sj.Caches,
		"artifacts":    sj.Artifacts,
		"dependencies": sj.Dependencies,
	}
	b, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	resp := filepath.Join(dir, "response.json")
	if err := os.WriteFile(resp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "tether.yaml")
	conf := fmt.Sprintf("namespace: %s\nkubeconfig: %s\nhelper-image: %s\ngitlab-helper-image: %s\npull-policy: Never\n%s",
		ns, c.Kubeconfig, HelperImage, sj.GitLabHelperImage, sj.Config)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &runnerStandIn{t: t, bin: buildTether(t), dir: dir, jobID: jobID, job: runnerJob{
		ID: id, Token: standInToken(id), URL: sj.URL, Name: sj.Name, Ref: sj.Ref,
		BuildsDir: "/builds", CacheDir: "/cache", ProjectPath: "project",
		Caches: sj.Caches, Artifacts: sj.Artifacts, Dependencies: sj.Dependencies,
	}}
	for _, v := range sj.Variables {
		file, _ := v["file"].(bool)
		r.job.Variables = append(r.job.Variables, runnerVar{Key: fmt.Sprint(v["key"]), Value: fmt.Sprint(v["value"]), File: file})
	}
	r.env = append(os.Environ(),
		"JOB_RESPONSE_FILE="+resp,
		fmt.Sprintf("BUILD_FAILURE_EXIT_CODE=%d", standInBuildFailure),
		fmt.Sprintf("SYSTEM_FAILURE_EXIT_CODE=%d", standInSystemFailure),
		"TETHER_CONFIG="+cfg,
		"CUSTOM_ENV_CI_RUNNER_ID=7",
		"CUSTOM_ENV_CI_RUNNER_VERSION=18.0.0",
		"CUSTOM_ENV_CI_JOB_ID="+jobID,
		"CUSTOM_ENV_CI_PROJECT_ID=42",
		"CUSTOM_ENV_CI_PIPELINE_ID=99",
	)
	for _, v := range sj.Variables {
		r.env = append(r.env, fmt.Sprintf("CUSTOM_ENV_%s=%s", v["key"], v["value"]))
	}
	return r
}

// command returns `tether gitlab ARGS...` with the runner's environment.
func (r *runnerStandIn) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, r.bin, append([]string{"gitlab"}, args...)...)
	cmd.Env, cmd.Dir = r.env, r.dir
	return cmd
}

// stageScript writes a user stage's script as the runner's bash shell
// writer does (runnerJob.rawStageScript), body as its commands and vars as
// variables of the job besides its own, and returns its path.
func (r *runnerStandIn) stageScript(stage, body string, vars map[string]string) string {
	job := r.job
	job.Variables = append([]runnerVar(nil), job.Variables...)
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		job.Variables = append(job.Variables, runnerVar{Key: k, Value: vars[k]})
	}
	return r.writeScript(stage, job.rawStageScript(body))
}

// writeScript writes a stage's script into the stand-in's directory.
func (r *runnerStandIn) writeScript(stage, script string) string {
	p := filepath.Join(r.dir, "script-"+stage)
	if err := os.WriteFile(p, []byte(script), 0o700); err != nil {
		r.t.Fatal(err)
	}
	return p
}

// prepare runs prepare_exec, fails the test if it fails, and returns its
// output (stdout and stderr: the job log's prepare section).
func (r *runnerStandIn) prepare(ctx context.Context) string {
	r.t.Helper()
	out, err := r.command(ctx, "prepare").CombinedOutput()
	r.t.Logf("prepare:\n%s", out)
	r.t.Cleanup(func() { r.cleanup(context.Background()) })
	if err != nil {
		r.t.Fatalf("prepare: %v", err)
	}
	return string(out)
}

// run runs run_exec for one user stage whose commands are body and returns
// its stdout, its exit code and what it wrote to BUILD_EXIT_CODE_FILE.
func (r *runnerStandIn) run(ctx context.Context, stage, body string, vars map[string]string) (string, int, string) {
	r.t.Helper()
	return r.runScript(ctx, stage, r.stageScript(stage, body, vars))
}

// runStage runs stage as the runner would, with the script it generates
// for the stand-in's job (runnerJob.stageScript), user commands for a user
// stage. ran is false when the runner would skip the stage.
func (r *runnerStandIn) runStage(ctx context.Context, stage string, commands ...string) (out string, code int, written string, ran bool) {
	r.t.Helper()
	script, ok := r.job.stageScript(stage, commands)
	if !ok {
		return "", 0, "", false
	}
	out, code, written = r.runScript(ctx, stage, r.writeScript(stage, script))
	return out, code, written, true
}

// runScript runs run_exec with the script file and stage.
func (r *runnerStandIn) runScript(ctx context.Context, stage, script string) (string, int, string) {
	r.t.Helper()
	codeFile := filepath.Join(r.dir, "exit-code-"+stage)
	_ = os.Remove(codeFile)
	cmd := r.command(ctx, "run", script, stage)
	cmd.Env = append(cmd.Env, "BUILD_EXIT_CODE_FILE="+codeFile)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		r.t.Fatalf("run %s: %v", stage, err)
	}
	if stderr.Len() > 0 {
		r.t.Logf("run %s stderr:\n%s", stage, stderr.String())
	}
	r.stderr = stderr.String()
	written, _ := os.ReadFile(codeFile)
	return string(out), code, string(written)
}

// cleanup runs cleanup_exec; it must succeed whatever state the pod is in.
func (r *runnerStandIn) cleanup(ctx context.Context) {
	r.t.Helper()
	if out, err := r.command(ctx, "cleanup").CombinedOutput(); err != nil {
		r.t.Errorf("cleanup: %v\n%s", err, out)
	}
}

// TestGitLabDriverJob: a GitLab job through the driver: newline-less
// progress arrives dot by dot, a failing build_script is a build failure
// with its own code in BUILD_EXIT_CODE_FILE, after_script still runs, a
// masked variable never appears in the job log nor in any object of the
// namespace, and cleanup leaves nothing (twice: it is idempotent).
func TestGitLabDriverJob(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab")
	const secret = "gl-masked-value-5150"
	r := newRunnerStandIn(t, c, ns, []map[string]any{
		{"key": "DEPLOY_TOKEN", "value": secret, "masked": true},
		{"key": "GREETING", "value": "hello", "masked": false},
	})
	r.prepare(ctx)
	vars := map[string]string{"DEPLOY_TOKEN": secret, "GREETING": "hello"}

	// 1. Progress without newlines reaches the runner dot by dot.
	cmd := r.command(ctx, "run", r.stageScript("step_script",
		"for i in 1 2 3 4 5; do printf .; sleep 1; done\necho \" $GREETING token=$DEPLOY_TOKEN\"\n", vars), "step_script")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var arrivals []time.Duration
	var out strings.Builder
	rd := bufio.NewReader(stdout)
	for {
		b, err := rd.ReadByte()
		if err != nil {
			break
		}
		if b == '.' && len(arrivals) < 5 {
			arrivals = append(arrivals, time.Since(start))
		}
		out.WriteByte(b)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run step_script: %v (output %q)", err, out.String())
	}
	t.Logf("dots arrived after %v; the stage took %v", arrivals, time.Since(start))
	if out.String() != "..... hello token=[MASKED]\n" {
		t.Fatalf("step_script output %q", out.String())
	}
	// Four one-second sleeps separate the first dot from the last: had
	// they been held back and sent together, they would arrive at once.
	if len(arrivals) != 5 || arrivals[4]-arrivals[0] < 3*time.Second {
		t.Fatalf("the dots arrived together (%v), not one by one", arrivals)
	}

	// 2. exit 3 in build_script: a build failure with 3 in
	// BUILD_EXIT_CODE_FILE; after_script (the runner's next call) runs.
	got, code, written := r.run(ctx, "build_script", "echo building\nexit 3\n", vars)
	if code != standInBuildFailure || written != "3" || got != "building\n" {
		t.Fatalf("build_script: exit %d, BUILD_EXIT_CODE_FILE %q, output %q; want %d, 3, building", code, written, got, standInBuildFailure)
	}
	got, code, _ = r.run(ctx, "after_script", "echo after-ran\n", vars)
	if code != 0 || got != "after-ran\n" {
		t.Fatalf("after_script: exit %d output %q", code, got)
	}

	// 3. The masked value is in no ConfigMap, Secret or pod of the namespace.
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cms, err := c.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secs, err := c.Client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("%d pods in the namespace, want the job's one", len(pods.Items))
	}
	for what, obj := range map[string]any{"pods": pods, "configmaps": cms, "secrets": secs} {
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), secret) {
			t.Errorf("the masked value is stored in the namespace's %s", what)
		}
	}
	r.cleanup(ctx)
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
	r.cleanup(ctx) // idempotent: the pod is gone
}

// TestGitLabDriverSIGTERM: SIGTERM to run mid-stage (the runner cancelling
// or timing out the job) sends TERM to the script's process group; run
// exits promptly with the script's output collected, says so in one line
// after it (the job log: run's stdout and stderr in one pipe), and
// cleanup leaves nothing.
func TestGitLabDriverSIGTERM(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-term")
	r := newRunnerStandIn(t, c, ns, nil)
	r.prepare(ctx)
	cmd := r.command(ctx, "run", r.stageScript("build_script",
		"trap 'echo got TERM; exit 143' TERM\necho started\nsleep 300 &\nwait\n", nil), "build_script")
	rd := bufio.NewReader(runMerged(t, cmd))
	line, err := rd.ReadString('\n')
	if err != nil || line != "started\n" {
		t.Fatalf("first line %q: %v", line, err)
	}
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var rest strings.Builder
	if _, err := rd.WriteTo(&rest); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	took := time.Since(sent)
	t.Logf("run exited %v after SIGTERM (%v); output after it %q", took, err, rest.String())
	if !strings.HasPrefix(rest.String(), "got TERM\n") {
		t.Fatalf("the script did not get TERM: output %q", rest.String())
	}
	if lines := driverLines(t, strings.TrimPrefix(rest.String(), "got TERM\n")); len(lines) != 1 ||
		lines[0] != "WARNING: tether: stage build_script was cancelled (received SIGTERM): its script was stopped and ended with exit code 143" {
		t.Fatalf("the driver's lines after the output: %q; want the cancel said in one line", lines)
	}
	if took > 30*time.Second {
		t.Fatalf("run took %v to exit after SIGTERM", took)
	}
	r.cleanup(ctx)
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}
