package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tether-ci/tether/integration/gitlab/stage"
)

// The GitLab driver's stages on the real node, called the way GitLab
// Runner's Custom executor calls a driver (each stage a new `tether gitlab
// run SCRIPT STAGE` process with the runner's environment, as the e2e
// stand-in in test/e2e does): an echo job (prepare; prepare_script,
// get_sources, step_script `echo hello`, cleanup_file_variables; cleanup)
// whose API requests are counted from the node apiserver's audit log, and
// trivial stages (`true`) timed from the process's start to its exit, as
// the runner sees a stage.

// echoJobStages are the stages the runner runs for a job with one command
// and no cache, artifacts or after_script, with their scripts' bodies.
var echoJobStages = []struct{ name, body string }{
	{"prepare_script", `echo "Running on $(hostname)..."`},
	{"get_sources", "mkdir -p /builds/project"},
	{"step_script", "echo hello"},
	{"cleanup_file_variables", "rm -f /builds/project.tmp/gitlab_runner_env"},
}

// gitlabJob is one job of the runner's environment for `tether gitlab`.
type gitlabJob struct {
	// bin is tether, stageBin tether-stage beside it.
	bin, stageBin, dir, pod string
	env                     []string
}

func newGitlabJob(cfg *config, n *node, ws *workspace, id int64) (*gitlabJob, error) {
	dir, err := os.MkdirTemp(ws.dir, "gitlab-")
	if err != nil {
		return nil, err
	}
	resp, err := json.Marshal(map[string]any{
		"id": id, "token": "bench", "image": map[string]any{"name": n.images.build},
		"runner_info": map[string]any{"timeout": 600},
		"job_info":    map[string]any{"id": id, "name": "bench", "project_id": 42},
	})
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "response.json"), resp, 0o600); err != nil {
		return nil, err
	}
	conf := fmt.Sprintf("kubeconfig: %s\nhelper-image: %s\ngitlab-helper-image: none\npull-policy: Never\nlog-file: %s\nverbose: true\n", n.kubeconfig, n.images.helper, filepath.Join(dir, agentLogName))
	if err := os.WriteFile(filepath.Join(dir, "tether.yaml"), []byte(conf), 0o600); err != nil {
		return nil, err
	}
	j := &gitlabJob{bin: cfg.tether, stageBin: filepath.Join(filepath.Dir(cfg.tether), "tether-stage"), dir: dir, pod: fmt.Sprintf("tether-gitlab-r7-j%d", id)}
	j.env = append(os.Environ(),
		"JOB_RESPONSE_FILE="+filepath.Join(dir, "response.json"),
		"BUILD_FAILURE_EXIT_CODE=1", "SYSTEM_FAILURE_EXIT_CODE=2",
		"TETHER_CONFIG="+filepath.Join(dir, "tether.yaml"),
		"CUSTOM_ENV_CI_RUNNER_ID=7", "CUSTOM_ENV_CI_RUNNER_VERSION=18.1.3",
		fmt.Sprintf("CUSTOM_ENV_CI_JOB_ID=%d", id), "CUSTOM_ENV_CI_PROJECT_ID=42", "CUSTOM_ENV_CI_PIPELINE_ID=99",
	)
	return j, nil
}

// command runs `tether gitlab ARGS...` and returns its stdout and how
// long the process took, start to exit.
func (j *gitlabJob) command(ctx context.Context, args ...string) (string, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, j.bin, append([]string{"gitlab"}, args...)...)
	cmd.Env, cmd.Dir = j.env, j.dir
	out, d, err := timedOutput(cmd)
	return string(out), d, err
}

// stage runs one stage whose script's commands are body: with
// tether-stage (through the job's agent) when agent is set, else with
// `tether gitlab run`.
func (j *gitlabJob) stage(ctx context.Context, name, body string, agent bool) (string, time.Duration, error) {
	script, err := j.script(name, body)
	if err != nil {
		return "", 0, err
	}
	if !agent {
		// As tether-stage's fallback runs it: a `tether gitlab run` that is
		// run_exec itself would end the job's agent, which the
		// measurements interleaved with this one use.
		ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, j.bin, "gitlab", "run", script, name)
		cmd.Env, cmd.Dir = append(append([]string{}, j.env...), stage.FallbackVar+"=1"), j.dir
		out, d, err := timedOutput(cmd)
		return string(out), d, err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, j.stageBin, script, name)
	cmd.Env, cmd.Dir = j.env, j.dir
	out, d, err := timedOutput(cmd)
	return string(out), d, err
}

// script writes a stage's script whose commands are body.
func (j *gitlabJob) script(name, body string) (string, error) {
	script := filepath.Join(j.dir, "script-"+name)
	return script, os.WriteFile(script, []byte("#!/usr/bin/env bash\n"+body+"\n"), 0o700)
}

// agentWork sends the job's agent one stage as tether-stage does, the
// harness standing in for the stage process, and returns how long the
// agent took from the request to its exit frame.
func (j *gitlabJob) agentWork(name, body string) (time.Duration, error) {
	script, err := j.script(name, body)
	if err != nil {
		return 0, err
	}
	env := func(k string) string {
		for i := len(j.env) - 1; i >= 0; i-- {
			if key, v, ok := strings.Cut(j.env[i], "="); ok && key == k {
				return v
			}
		}
		return ""
	}
	dir, err := stage.Dir(env)
	if err != nil {
		return 0, err
	}
	c, err := net.Dial("unix", filepath.Join(dir, stage.SocketName))
	if err != nil {
		return 0, fmt.Errorf("the job's agent: %w", err)
	}
	defer c.Close()
	start := time.Now()
	if err := stage.WriteEncoded(c, stage.FrameRequest, stage.Request{Args: []string{script, name}, Env: j.env, Dir: j.dir}); err != nil {
		return 0, err
	}
	for {
		typ, p, err := stage.ReadFrame(c)
		if err != nil {
			return 0, fmt.Errorf("the job's agent: %w", err)
		}
		switch typ {
		case stage.FrameDecline:
			return 0, fmt.Errorf("the job's agent declined the stage: %s", p)
		case stage.FrameExit:
			if string(p) != "0" {
				return 0, fmt.Errorf("the agent's stage ended with %s", p)
			}
			return time.Since(start), nil
		}
	}
}

// gitlabSection is the GitLab driver on the real node, when there is one.
func gitlabSection(ctx context.Context, cfg *config, ws *workspace, log *slog.Logger) (*section, error) {
	sec := &section{title: "GitLab driver on the real node (scripts/e2e-cluster-up.sh)"}
	stageGoal, requestGoal := "GitLab stage overhead (trivial stage, as the runner sees it)", "API requests per GitLab echo job (node apiserver audit log)"
	n, why := findNode(ctx, cfg, os.Getenv)
	if n == nil {
		sec.notes = append(sec.notes, "**Skipped: no node** — "+why+".")
		sec.goals = append(sec.goals,
			goal{measure: stageGoal, tether: "—", baseline: "—", target: "≤ 20 ms", verdict: "skipped: no node"},
			goal{measure: requestGoal, tether: "—", baseline: "—", target: "≤ 15", verdict: "skipped: no node"})
		return sec, nil
	}
	if err := gitlabStages(ctx, cfg, n, ws, sec, log); err != nil {
		log.Error("GitLab measurement failed", "err", err)
		sec.notes = append(sec.notes, "**GitLab driver FAILED:** "+tailOf([]byte(err.Error()), 800))
		sec.goals = append(sec.goals,
			goal{measure: stageGoal, tether: "—", baseline: "—", target: "≤ 20 ms", verdict: "FAILED (see below)"},
			goal{measure: requestGoal, tether: "—", baseline: "—", target: "≤ 15", verdict: "FAILED (see below)"})
	}
	return sec, nil
}

// gitlabStages measures the echo job's API requests and the trivial
// stage's time and adds them to sec.
func gitlabStages(ctx context.Context, cfg *config, n *node, ws *workspace, sec *section, log *slog.Logger) error {
	audit := filepath.Join(cfg.e2eDir, "logs", "audit.log")
	id := time.Now().UnixNano() % 1_000_000_000
	j, err := newGitlabJob(cfg, n, ws, id)
	if err != nil {
		return err
	}
	start := time.Now()
	if out, _, err := j.command(ctx, "prepare"); err != nil {
		return fmt.Errorf("prepare: %w\n%s", err, tailOf([]byte(out), 600))
	}
	defer func() { _, _, _ = j.command(context.WithoutCancel(ctx), "cleanup") }()
	for _, s := range echoJobStages {
		out, _, err := j.stage(ctx, s.name, s.body, true)
		if err != nil {
			return fmt.Errorf("stage %s: %w\n%s", s.name, err, tailOf([]byte(out), 600))
		}
		if s.name == "step_script" && out != "hello\n" {
			return fmt.Errorf("step_script printed %q, want %q", out, "hello\n")
		}
	}
	echoEnd := time.Now()
	// The trivial stages, in the same pod.
	// Interleaved with them, the floor of any stage: a process of the
	// same binary that does nothing (`tether version`), and its Go
	// package initialisation.
	// Each round: a trivial stage through the agent (tether-stage), the
	// agent's part of one (the harness as the stage process), one
	// without it (`tether gitlab run`), and the binary's start.
	rounds := max(cfg.repeat*5, 15)
	sdir, err := stubDir()
	if err != nil {
		return err
	}
	defer os.RemoveAll(sdir)
	stub, err := newStubAgent(sdir, j.env, id+1)
	if err != nil {
		return err
	}
	defer stub.close()
	ab, err := newAgentAB(ctx, cfg, n, ws, j, id+2, os.Getenv(agentBeforeVar))
	if err != nil {
		return err
	}
	defer ab.close(ctx)
	var agentStages, agentWork, stageStarts, stubStages, stages, starts, inits durations
	for range rounds {
		out, d, err := j.stage(ctx, "step_script", "true", true)
		if err != nil {
			return fmt.Errorf("trivial stage through the agent: %w\n%s", err, tailOf([]byte(out), 600))
		}
		agentStages = append(agentStages, d)
		if d, err = j.agentWork("step_script", "true"); err != nil {
			return err
		}
		agentWork = append(agentWork, d)
		if err := ab.round(); err != nil {
			return err
		}
		if d, err = versionRun(ctx, j.stageBin); err != nil {
			return err
		}
		stageStarts = append(stageStarts, d)
		if d, err = stub.run(ctx, j.stageBin); err != nil {
			return err
		}
		stubStages = append(stubStages, d)
		out, d, err = j.stage(ctx, "step_script", "true", false)
		if err != nil {
			return fmt.Errorf("trivial stage: %w\n%s", err, tailOf([]byte(out), 600))
		}
		stages = append(stages, d)
		d, initTime, err := processStart(ctx, j.bin)
		if err != nil {
			return err
		}
		starts, inits = append(starts, d), append(inits, initTime)
	}
	builds, buildsNote, err := stageBuildsTable(ctx, j, stub, rounds)
	if err != nil {
		return err
	}
	cleanupStart := time.Now()
	if out, _, err := j.command(ctx, "cleanup"); err != nil {
		return fmt.Errorf("cleanup: %w\n%s", err, tailOf([]byte(out), 600))
	}
	end := time.Now()
	log.Info("gitlab stages", "agent median", agentStages.median(), "direct median", stages.median(), "rounds", rounds)

	t := &table{head: []string{"GitLab driver (real node)", "result"}}
	t.add(fmt.Sprintf("trivial stage (`true`) through the job's agent, `tether-stage` start → exit, %d stages", rounds),
		fmt.Sprintf("median %s, p90 %s, min %s", ms(agentStages.median()), ms(agentStages.percentile(90)), ms(agentStages.min())))
	t.add("of which the agent's work: request on its socket → exit code (configuration, attach, job, final record)",
		fmt.Sprintf("median %s, p90 %s, min %s", ms(agentWork.median()), ms(agentWork.percentile(90)), ms(agentWork.min())))
	for _, r := range ab.rows() {
		t.add(r[0], r[1])
	}
	if steps, err := agentStepRows(filepath.Join(j.dir, agentLogName), "step_script", echoEnd); err != nil {
		sec.notes = append(sec.notes, "The agent's steps were not read: "+err.Error())
	} else {
		for _, r := range steps {
			t.add(r[0], r[1])
		}
	}
	t.add("of which the stage process: start, socket, relay, exit (medians' difference)",
		ms(agentStages.median()-agentWork.median()))
	t.add("of which its process start: `tether-stage --version` start → exit (same binary, no work)",
		fmt.Sprintf("median %s, p90 %s, min %s", ms(stageStarts.median()), ms(stageStarts.percentile(90)), ms(stageStarts.min())))
	t.add("`tether-stage` against a stub agent that answers the exit code at once: start, connect, request, relay, exit",
		fmt.Sprintf("median %s, p90 %s, min %s", ms(stubStages.median()), ms(stubStages.percentile(90)), ms(stubStages.min())))
	t.add("of which beyond its start: connect, request, relay, exit (medians' difference)",
		ms(stubStages.median()-stageStarts.median()))
	t.add("left between the agent's socket and the stage process: accept, request read, exit frame, wake-ups (total − stub stage − agent's part)",
		ms(agentStages.median()-stubStages.median()-agentWork.median()))
	t.add(fmt.Sprintf("trivial stage (`true`) without the agent, `tether gitlab run` start → exit, %d stages", rounds),
		fmt.Sprintf("median %s, p90 %s, min %s", ms(stages.median()), ms(stages.percentile(90)), ms(stages.min())))
	t.add("of which process start: `tether version` start → exit (same binary, no work)",
		fmt.Sprintf("median %s, p90 %s, min %s", ms(starts.median()), ms(starts.percentile(90)), ms(starts.min())))
	t.add("of which Go package initialisation (GODEBUG=inittrace=1, sum of the packages' clock)",
		fmt.Sprintf("median %s, min %s", ms(inits.median()), ms(inits.min())))
	t.add("the stage's own work: configuration, connect, attach, job, final record (medians' difference)",
		ms(stages.median()-starts.median()))
	sec.goals = append(sec.goals, goal{
		measure: "GitLab stage overhead (trivial stage, as the runner sees it)",
		tether:  fmt.Sprintf("median %s (without the agent %s)", ms(agentStages.median()), ms(stages.median())), baseline: "GitLab k8s executor ≈ 500 ms",
		target: "≤ 20 ms", verdict: verdict(agentStages.median() <= 20*time.Millisecond),
	})
	// The audit log is written asynchronously: give it a moment.
	time.Sleep(2 * time.Second)
	counts, total, err := auditRequests(audit, j.pod, [][2]time.Time{{start, echoEnd}, {cleanupStart, end}})
	if err != nil {
		sec.notes = append(sec.notes, "API requests per echo job not counted: "+err.Error())
		sec.goals = append(sec.goals, goal{measure: "API requests per GitLab echo job (audit log)", tether: "—", baseline: "GitLab's executor 39", target: "≤ 15", verdict: "skipped: no audit log"})
	} else {
		keys := make([]string, 0, len(counts))
		for k := range counts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			t.add("echo job requests: "+k, fmt.Sprint(counts[k]))
		}
		sec.goals = append(sec.goals, goal{
			measure: "API requests per GitLab echo job (node apiserver audit log)",
			tether:  fmt.Sprint(total), baseline: "GitLab's executor 39",
			target: "≤ 15, every one with Tether's User-Agent", verdict: verdict(total <= 15 && counts["(not Tether's User-Agent)"] == 0),
		})
	}
	sec.tabs = append(sec.tabs, t)
	if builds != nil {
		sec.tabs = append(sec.tabs, builds)
	} else {
		sec.notes = append(sec.notes, buildsNote)
	}
	sec.notes = append(sec.notes, "GitLab driver: `tether gitlab` called as GitLab Runner's Custom executor calls it (each stage a new process; runner environment as test/e2e's stand-in sets it; gitlab-helper-image none): prepare (which starts the job's stage agent), run_exec `tether-stage` (through the agent) or `tether gitlab run` (without it), cleanup. "+
		"The echo job is prepare, prepare_script, get_sources, step_script (`echo hello`), cleanup_file_variables (all four through the agent) and cleanup; its requests are the audit log's entries (one per request) about its pod or the identity's access reviews, in its time windows, by User-Agent, verb and resource. "+
		"The trivial stages run in the same pod between step_script and cleanup, interleaved: through the agent, the agent's part alone, `tether-stage --version`, `tether-stage` against a stub agent (the harness, answering exit code 0 at once), without the agent (`tether gitlab run` as tether-stage's fallback runs it, so that the agent stays), `tether version`.")
	return nil
}

// auditEvent is what the request count reads of an audit log line.
type auditEvent struct {
	AuditID   string `json:"auditID"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	URI       string `json:"requestURI"`
	Received  string `json:"requestReceivedTimestamp"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Name        string `json:"name"`
	} `json:"objectRef"`
}

// auditRequests counts the requests in the audit log at path that concern
// pod (its name in the request), or are the GitLab driver's access reviews
// and pod creates, received in one of windows, by "verb resource[/sub]" with "(not Tether's User-Agent)" for
// those without it.
func auditRequests(path, pod string, windows [][2]time.Time) (map[string]int, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("the node's apiserver keeps no audit log (%w): restart the node's apiserver with one: TETHER_E2E_AUDIT=restart scripts/e2e-cluster-up.sh, with nothing else running on the node", err)
	}
	defer f.Close()
	seen := map[string]bool{}
	counts := map[string]int{}
	total := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.ObjectRef == nil || seen[ev.AuditID] {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, ev.Received)
		if err != nil || !inWindows(at, windows) {
			continue
		}
		// A create's URI does not name the object: the driver's pod
		// creates and access reviews are the driver's (User-Agent) ones.
		driver := strings.HasPrefix(ev.UserAgent, "tether/") && strings.HasSuffix(ev.UserAgent, " gitlab")
		review := strings.HasPrefix(ev.ObjectRef.Resource, "selfsubject")
		create := ev.Verb == "create" && ev.ObjectRef.Resource == "pods" && ev.ObjectRef.Subresource == ""
		if !strings.Contains(ev.URI, pod) && ev.ObjectRef.Name != pod && !((review || create) && driver) {
			continue
		}
		seen[ev.AuditID] = true
		what := ev.Verb + " " + ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			what += "/" + ev.ObjectRef.Subresource
		}
		if !strings.HasPrefix(ev.UserAgent, "tether/") {
			counts["(not Tether's User-Agent)"]++
		}
		counts[what]++
		total++
	}
	if err := sc.Err(); err != nil && err != io.EOF {
		return nil, 0, fmt.Errorf("read the audit log: %w", err)
	}
	return counts, total, nil
}

// versionRun runs `bin --version` and returns how long the process took,
// start to exit.
func versionRun(ctx context.Context, bin string) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, bin, "--version")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%s --version: %w: %s", bin, err, tailOf([]byte(out.String()), 600))
	}
	return time.Since(start), nil
}

// processStart runs `bin version` with Go's init trace and returns how
// long the process took, start to exit, and the sum of its packages'
// initialisation clock times.
func processStart(ctx context.Context, bin string) (time.Duration, time.Duration, error) {
	cmd := exec.CommandContext(ctx, bin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("%s version: %w: %s", bin, err, tailOf([]byte(stderr.String()), 600))
	}
	d := time.Since(start)
	var sum time.Duration
	for _, line := range strings.Split(stderr.String(), "\n") {
		// init PKG @T ms, N ms clock, ...
		f := strings.Fields(line)
		if len(f) >= 7 && f[0] == "init" && f[6] == "clock," {
			if v, err := time.ParseDuration(f[4] + "ms"); err == nil {
				sum += v
			}
		}
	}
	return d, sum, nil
}

func inWindows(at time.Time, windows [][2]time.Time) bool {
	for _, w := range windows {
		if !at.Before(w[0]) && !at.After(w[1]) {
			return true
		}
	}
	return false
}
