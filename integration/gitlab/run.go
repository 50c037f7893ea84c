package gitlab

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	gitlab "github.com/tether-ci/tether/integration/gitlab/internal/runnerapi"
	"github.com/tether-ci/tether/internal/cmdutil"
	"github.com/tether-ci/tether/protocol"
)

// Run is run_exec: it delivers the stage's script (the file script)
// over the attach stream, runs it in the build container (or the helper
// container, for the stages that need git or gitlab-runner-helper) and
// maps the result onto the runner's exit codes: 0, BUILD_FAILURE_EXIT_CODE
// (the script's own code written to BUILD_EXIT_CODE_FILE first) or
// SYSTEM_FAILURE_EXIT_CODE. The script's output goes to stdout byte-exact;
// the driver's own lines follow it, on lines of their own.
func Run(ctx context.Context, cfg *Settings, env Env, script, stage string, stdout, stderr io.Writer) int {
	codes := gitlab.ReadExitCodes(env)
	log := cfg.logger().With("stage", stage)
	content, err := os.ReadFile(script)
	if err != nil {
		fmt.Fprintf(stderr, "ERROR: tether: stage %s: the stage script: %v\n", stage, err)
		return codes.SystemFailure
	}
	if !gitlab.KnownStage(stage) {
		fmt.Fprintf(stderr, "WARNING: tether: unknown stage %s: running it in the build container\n", stage)
	}
	readJob := cfg.readJob
	if readJob == nil {
		readJob = func(env Env) (*gitlab.Job, error) { return gitlab.ReadJob(env) }
	}
	job, err := readJob(env)
	if err != nil {
		fmt.Fprintf(stderr, "ERROR: tether: %v\n", err)
		return codes.SystemFailure
	}
	pod, transport, _, err := gitlabPod(cfg, env, log)
	if err == nil {
		err = findClaimed(ctx, cfg, pod)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ERROR: tether: %v\n", err)
		return codes.SystemFailure
	}
	helper, err := cfg.helperImage(env)
	if err != nil {
		fmt.Fprintf(stderr, "ERROR: tether: %v\n", err)
		return codes.SystemFailure
	}
	if helper != "" && gitlab.InHelper(stage) {
		pod.Container = kube.HelperContainer
	}
	stageJob, warning := gitlabStageJob(stage, content, job, cfg, env)
	spareKey := pod.Namespace + "/" + pod.Name + "/" + pod.Container
	at := stageStart{started: cfg.stageStarted, clock: cfg.clock}
	resumeJob, from, skip, resume, err := resumeOf(env)
	if err != nil {
		fmt.Fprintf(stderr, "ERROR: tether: %v\n", err)
		return codes.SystemFailure
	}
	if resume {
		// The stage agent began this stage and is gone: follow its job
		// from where its records start, writing only what its stage
		// process did not write yet.
		stageJob.ID, at = resumeJob, stageStart{resume: true, from: from}
		stdout = &skipWriter{w: stdout, n: skip}
	}
	if warning != "" {
		fmt.Fprintf(stdout, "WARNING: tether: %s\n", warning)
	}
	if !resume && cfg.spares != nil {
		at.spare, at.end, at.endKnown = cfg.spares.take(ctx, spareKey)
		at.adopt = func(c client.Conn) client.Conn { return cfg.spares.adopt(spareKey, c) }
	}
	// While the script runs, the job log is its output alone: what the
	// driver must say comes after it, on lines of its own.
	gate, ok := stdout.(*client.LineGate)
	if !ok {
		gate = client.NewLineGate(stdout)
	}
	notices := newStageNotices()
	events := notices.event
	if cfg.clock != nil {
		events = func(ev client.Event) {
			cfg.clock.event(ev)
			notices.event(ev)
		}
	}
	cfg.clock.mark(stepReady)
	res, last, err := runStage(ctx, transport(kube.TransportOptions{Logger: log}), stageJob,
		client.Options{Output: gate, Logger: log, Events: events}, at)
	// A script whose last line has no newline: the driver's lines start
	// on a line of their own.
	_ = gate.End(gate)
	out := stageOutcome(res, err, job.Timeout(), stageJob.Timeout, stage)
	if cfg.spares != nil {
		// The job's next stage in this container finds it attached: on
		// this stage's connection when its job ended over it, else on a
		// new one (none after a system failure).
		cfg.spares.put(spareKey, last, err == nil, res.Offset, !out.system, func() *kube.Transport { return transport(kube.TransportOptions{}) })
	}
	where := fmt.Sprintf("pod %s/%s", pod.Namespace, pod.Name)
	lines := notices.lines(stage, where)
	if line := outcomeLine(stage, where, pod.Container, out, res, err, context.Cause(ctx)); line != "" {
		lines = append(lines, line)
	}
	for _, line := range lines {
		fmt.Fprintln(gate, line)
	}
	switch {
	case out.system:
		return codes.SystemFailure
	case out.code == 0:
		return 0
	}
	if codes.BuildExitCodeFile != "" {
		if werr := os.WriteFile(codes.BuildExitCodeFile, []byte(strconv.Itoa(out.code)), 0o600); werr != nil {
			fmt.Fprintf(gate, "ERROR: tether: cannot write the stage's exit code to BUILD_EXIT_CODE_FILE: %v\n", werr)
			return codes.SystemFailure
		}
	}
	return codes.BuildFailure
}

// gitlabStageJob is the job that runs stage's script: the script delivered
// over the stream into the files volume, the job's masked values, the
// driver's shell, and for after_script its own timeout, as the runner
// gives it (RUNNER_AFTER_SCRIPT_TIMEOUT, default 5m), enforced by the shim
// in band. warning is a line for the job log about a timeout setting the
// runner ignores.
func gitlabStageJob(stage string, content []byte, job *gitlab.Job, cfg *Settings, getenv func(string) string) (client.Job, string) {
	target := path.Join(kube.FilesDir, stage)
	if cfg.Shell == "" {
		content = withoutInterpreter(content)
	}
	j := client.Job{
		ID:      client.NewJobID(stage),
		Scripts: []string{target},
		Files:   []client.File{{Path: target, Content: content}},
		Mask:    job.MaskedValues(),
		Shell:   cfg.Shell,
	}
	var warning string
	if stage == gitlab.AfterScriptStage {
		j.Timeout, warning = gitlab.AfterScriptTimeout(getenv)
	}
	return j, warning
}

// stageResult is how a stage ended, in the runner's terms.
type stageResult struct {
	// system is an infrastructure failure (SYSTEM_FAILURE_EXIT_CODE).
	system bool
	// code is the script's exit code: 0 success, else a build failure
	// (BUILD_FAILURE_EXIT_CODE, the code in BUILD_EXIT_CODE_FILE).
	code int
	// note is a line for the job log saying why, if the output cannot.
	note string
}

// stageOutcome maps a stage's result (res, err from client.Run) onto the
// runner's contract. timeout is the job's, stageTimeout the stage's own
// (after_script's; the shim stopped the stage when it passed).
func stageOutcome(res client.Result, err error, timeout, stageTimeout time.Duration, stage string) stageResult {
	if ended := cmdutil.ContainerOOM(err); ended != nil {
		// The kernel killed the build container, the shim with it: the
		// job used more memory than its limit, a failure of the job.
		return stageResult{code: cmdutil.ExitOOMKilled, note: fmt.Sprintf("the %s container was killed while stage %s ran: %s", ended.Container, stage, cmdutil.OOMText(ended.MemoryLimit))}
	}
	deadline := res.Exit != nil && res.Exit.Reason == protocol.ReasonDeadline
	if err != nil && !res.Cancelled && !deadline {
		return stageResult{system: true}
	}
	out := stageResult{code: res.ExitCode}
	if err == nil && out.code == 0 {
		return out
	}
	if out.code == 0 {
		out.code = 1
	}
	for _, st := range res.Statuses {
		if st.Error != "" && st.CommandExitCode != 0 && !res.Cancelled {
			// The shim could not run the script (its shell missing, say):
			// the script wrote nothing to say so. (A cancelled script's
			// error says it was cancelled: gitlab run says that itself.)
			out.note = fmt.Sprintf("stage %s: %s", stage, st.Error)
		}
		if st.OOMKilled {
			out.note = fmt.Sprintf("stage %s was killed: %s", stage, cmdutil.OOMText(st.MemoryLimit))
		}
		if strings.HasPrefix(st.Error, protocol.JobTimeoutReason) {
			out.note = fmt.Sprintf("the %s timeout (%s, %s) passed: stage %s was stopped", stage, stageTimeout, gitlab.AfterScriptTimeoutVar, stage)
		}
	}
	if deadline {
		out.note = fmt.Sprintf("the job's timeout (%s) passed: stage %s was stopped", timeout, stage)
	}
	return out
}

// Cleanup is cleanup_exec: it deletes the job's pod, with the configured
// termination grace; a pod that is already gone (never created, or
// deleted before) is fine. It returns 0 or SYSTEM_FAILURE_EXIT_CODE.
func Cleanup(ctx context.Context, cfg *Settings, env Env, stderr io.Writer) int {
	codes := gitlab.ReadExitCodes(env)
	pod, _, _, err := gitlabPod(cfg, env, cfg.logger())
	if err != nil {
		fmt.Fprintf(stderr, "tether gitlab cleanup: %v\n", err)
		return codes.SystemFailure
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cmdutil.DeleteTimeout)
	defer cancel()
	if err := findClaimed(ctx, cfg, pod); err != nil {
		fmt.Fprintf(stderr, "tether gitlab cleanup: %v\n", err)
		return codes.SystemFailure
	}
	// The configured grace, even for a pod prepared before it was set.
	// A pod never created, or already gone, is fine.
	pod.DeleteGrace = time.Duration(cfg.TerminationGrace)
	if _, err := pod.DeleteByName(ctx); err != nil {
		// err names the pod and what failed (get or delete).
		fmt.Fprintf(stderr, "tether gitlab cleanup: %v%s\n", err, apiAdvice(err))
		return codes.SystemFailure
	}
	return 0
}

// withoutInterpreter blanks the script's #! line (the runner writes
// #!/usr/bin/env bash), keeping the line numbers: the shim then runs it
// with bash where the container has it, else sh, as GitLab's Kubernetes
// executor does, so images without bash (alpine, busybox) run jobs too.
func withoutInterpreter(script []byte) []byte {
	if !bytes.HasPrefix(script, []byte("#!")) {
		return script
	}
	if i := bytes.IndexByte(script, '\n'); i >= 0 {
		return script[i:]
	}
	return nil
}

// outcomeLine is the job-log line that says how a stage ended when its
// output cannot ("" for none): the outcome's note (a timeout, a kill for
// memory, a script that could not start), a system failure, a cancel (by
// cause, the signal the runner sent), or another error.
func outcomeLine(stage, where, container string, out stageResult, res client.Result, err, cause error) string {
	switch {
	case out.note != "":
		return "ERROR: tether: " + out.note
	case out.system:
		return fmt.Sprintf("ERROR: tether: stage %s in %s (container %s) failed: %v", stage, where, container, err)
	case res.Cancelled:
		return fmt.Sprintf("WARNING: tether: stage %s was cancelled (%v)%s", stage, cause, cmdutil.CancelledCode(res))
	case err != nil:
		return fmt.Sprintf("ERROR: tether: stage %s in %s ended: %v", stage, where, err)
	}
	return ""
}
