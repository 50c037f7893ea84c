package actions

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/actions/hookapi"
	"github.com/tether-ci/tether/integration/actions/internal/shell"
	"github.com/tether-ci/tether/integration/actions/internal/transfer"
	"github.com/tether-ci/tether/internal/cmdutil"
)

// RunScriptStep is run_script_step: it delivers the step's files (the
// script the runner wrote into its own _temp, the file-command files, the
// event payload) over the attach stream, runs the step's entry point in
// the job container with the step's environment, PATH and working
// directory, streams its stdout to stdout and its stderr to stderr, copies the file-command files
// back into the runner's _temp, and exits with the step's exit code. An
// outcome that cannot be known is a failure.
func RunScriptStep(ctx context.Context, h *Hook, in *hookapi.Input) int {
	return h.run(ctx, runScriptStep, in)
}

func runScriptStep(ctx context.Context, h *Hook, in *hookapi.Input, _ *afterExit) error {
	var args hookapi.ScriptStepArgs
	st, runnerTemp, err := h.stepInput(in, &args, "where it writes the step's script")
	if err != nil {
		return err
	}
	plan, err := planStep(&args, runnerTemp, st.Actions, h.warn)
	if err != nil {
		return fmt.Errorf("run_script_step: %w", err)
	}
	if err := addContainerEnv(&plan.job, st.Env); err != nil {
		return fmt.Errorf("run_script_step: %w", err)
	}
	c, err := h.connect()
	if err != nil {
		return err
	}
	pod := c.pod(h, st)
	log := h.logger()
	// Earlier steps' records stay in the shim's stream: start after them.
	from, err := client.StreamEnd(ctx, c.transport(h, pod), 0, client.Options{Logger: log})
	if err != nil {
		return fmt.Errorf("cannot reach the job's pod %s/%s: %w", st.Namespace, st.Pod, err)
	}
	res, err := kube.Run(ctx, c.transport(h, pod), plan.job,
		client.Options{Output: h.Stdout, Stderr: h.Stderr, Logger: log, From: from, ReconnectTimeout: h.Settings.ReconnectTimeout})
	var disrupted *kube.DisruptedError
	switch {
	case res.Cancelled:
		return &cancelledError{cause: context.Cause(ctx), detail: cmdutil.CancelledCode(res)}
	case errors.As(err, &disrupted):
		return fmt.Errorf("the step failed: the job's %w", disrupted)
	case err != nil:
		return &unknownOutcomeError{err: err}
	}
	h.warnReconnects(st, res.Reconnects)
	if meta := stepMetaScan(&args, h.Getenv); len(plan.fileCommands) > 0 || meta != nil {
		if err := collectFileCommands(ctx, h, c, pod, res.Offset, plan.fileCommands, meta); err != nil {
			return fileCommandsError(res.ExitCode, err)
		}
	}
	if res.ExitCode == 0 && len(plan.actions) > 0 {
		return recordActions(st, plan.actions, in.ResponseFile)
	}
	return stepResult(res.ExitCode)
}

// stepInput checks what a step's command needs before it acts: the state
// naming the job's pod, its arguments (decoded into args) and
// RUNNER_TEMP, the runner's _work/_temp (why says what the step needs of
// it). It returns the state and RUNNER_TEMP.
func (h *Hook) stepInput(in *hookapi.Input, args any, why string) (*hookapi.State, string, error) {
	st, err := hookapi.JobPod(in.State)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", in.Command, err)
	}
	if err := in.DecodeArgs(args); err != nil {
		return nil, "", err
	}
	runnerTemp := h.Getenv(EnvRunnerTemp)
	if runnerTemp == "" {
		return nil, "", fmt.Errorf("%s is not set: the runner sets it to its _work/_temp, %s", EnvRunnerTemp, why)
	}
	return st, runnerTemp, nil
}

// fileCommand is one file-command file: its container path and the
// runner-host path it is copied back to.
type fileCommand struct {
	container, host string
}

// stepPlan is what a step runs: the job (its files and the wrapper
// script) and the file-command files to copy back after it.
type stepPlan struct {
	job          client.Job
	fileCommands []fileCommand
	// actions are the action directories this step delivered (the job's
	// hookapi.State records them once the step succeeded).
	actions []string
}

// planStep builds the step's job: every runner-host file the step needs
// under TempDir (the script named in its arguments, the file-command
// files) and the event payload are delivered as files, and a wrapper
// script copies them into place, changes into the working directory,
// exports the environment and PATH and execs the entry point. The action
// directories the step needs that are not in delivered (hookapi.State.Actions) are
// delivered too (deliverActions).
func planStep(args *hookapi.ScriptStepArgs, runnerTemp string, delivered []string, warn func(string, ...any)) (*stepPlan, error) {
	if args.EntryPoint == "" {
		return nil, errors.New("the step has no entryPoint")
	}
	if err := checkWorkingDirectory(args.WorkingDirectory); err != nil {
		return nil, err
	}
	argv, err := shell.SplitArgs(args.EntryPointArgs)
	if err != nil {
		return nil, err
	}
	plan := &stepPlan{}
	w := transfer.NewScript(client.NewJobID("step"), "one run_script_step")
	deliver := func(container string, content []byte) {
		w.Deliver(container, content, 0o700)
	}
	seen := map[string]bool{}
	for _, a := range argv {
		host, ok := hostTempPath(runnerTemp, a)
		if !ok || seen[a] {
			continue
		}
		b, err := os.ReadFile(host)
		if errors.Is(err, fs.ErrNotExist) {
			continue // an argument that only looks like a path
		}
		if err != nil {
			return nil, fmt.Errorf("read the step's file %s: %w", host, err)
		}
		seen[a] = true
		deliver(a, b)
	}
	for _, v := range fileCommandVars {
		p := args.EnvironmentVariables[v]
		host, ok := hostTempPath(runnerTemp, p)
		if p == "" || seen[p] {
			continue
		}
		if !ok || !strings.HasPrefix(p, FileCommandsDir+"/") {
			warn("%s=%s is not under %s: it is not copied back to the runner", v, p, FileCommandsDir)
			continue
		}
		b, err := os.ReadFile(host)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read the file-command file %s: %w", host, err)
		}
		seen[p] = true
		deliver(p, b)
		plan.fileCommands = append(plan.fileCommands, fileCommand{container: p, host: host})
	}
	if b, err := os.ReadFile(hostWorkflowEvent(runnerTemp)); err == nil {
		deliver(WorkflowDir+"/event.json", b)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read the event payload: %w", err)
	}
	if err := deliverActions(plan, w, args, argv, runnerTemp, delivered); err != nil {
		return nil, err
	}
	if args.WorkingDirectory != "" {
		w.Printf("cd %s || fail %s\n", shell.Quote(args.WorkingDirectory),
			shell.Quote("cannot change to the working directory "+args.WorkingDirectory))
	}
	names := make([]string, 0, len(args.EnvironmentVariables))
	for k := range args.EnvironmentVariables {
		names = append(names, k)
	}
	slices.Sort(names)
	var viaEnv []string // names a shell cannot export (INPUT_FETCH-DEPTH): set by env(1)
	for _, k := range names {
		if !shell.CanExport(k) {
			if !shell.CanSetWithEnv(k) {
				warn("the step's variable %q is not a valid variable name: it is not set", k)
			} else {
				viaEnv = append(viaEnv, shell.Quote(k+"="+args.EnvironmentVariables[k]))
			}
			continue
		}
		w.Printf("export %s=%s\n", k, shell.Quote(args.EnvironmentVariables[k]))
	}
	if len(args.PrependPath) > 0 {
		w.Printf("export PATH=%s:\"$PATH\"\n", shell.Quote(strings.Join(args.PrependPath, ":")))
	}
	w.WriteString("exec ")
	if len(viaEnv) > 0 {
		w.WriteString("env " + strings.Join(viaEnv, " ") + " ")
	}
	w.WriteString(shell.Quote(args.EntryPoint))
	for _, a := range argv {
		w.WriteString(" " + shell.Quote(a))
	}
	w.WriteString("\n")
	plan.job = w.Job("step.sh")
	return plan, nil
}
