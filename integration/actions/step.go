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
	"github.com/tether-ci/tether/internal/cmdutil"
)

// RunScriptStep is run_script_step: it delivers the step's files (the
// script the runner wrote into its own _temp, the file-command files, the
// event payload) over the attach stream, runs the step's entry point in
// the job container with the step's environment, PATH and working
// directory, streams its output to stdout, copies the file-command files
// back into the runner's _temp, and exits with the step's exit code. An
// outcome that cannot be known is a failure.
func RunScriptStep(ctx context.Context, h *Hook, in *Input) int {
	st, err := podState(in.State)
	if err != nil {
		return h.fail("run_script_step: %v", err)
	}
	var args ScriptStepArgs
	if err := decodeArgs(in, &args); err != nil {
		return h.fail("%v", err)
	}
	runnerTemp := h.Getenv(EnvRunnerTemp)
	if runnerTemp == "" {
		return h.fail("%s is not set: the runner sets it to its _work/_temp, where it writes the step's script", EnvRunnerTemp)
	}
	plan, err := planStep(&args, runnerTemp, st.Actions, h.warn)
	if err != nil {
		return h.fail("run_script_step: %v", err)
	}
	if err := addContainerEnv(&plan.job, st.Env); err != nil {
		return h.fail("run_script_step: %v", err)
	}
	c, err := h.connect()
	if err != nil {
		return h.fail("%v", err)
	}
	pod := c.pod(h, st)
	log := h.logger()
	// Earlier steps' records stay in the shim's stream: start after them.
	from, err := client.StreamEnd(ctx, c.transport(h, pod), 0, client.Options{Logger: log})
	if err != nil {
		return h.fail("cannot reach the job's pod %s/%s: %v", st.Namespace, st.Pod, err)
	}
	res, err := kube.Run(ctx, c.transport(h, pod), plan.job,
		client.Options{Output: h.Stdout, Logger: log, From: from, ReconnectTimeout: h.Settings.ReconnectTimeout})
	var disrupted *kube.DisruptedError
	switch {
	case res.Cancelled:
		return h.fail("the step was cancelled (%v)%s", context.Cause(ctx), cmdutil.CancelledCode(res))
	case errors.As(err, &disrupted):
		return h.fail("the step failed: the job's %v", disrupted)
	case err != nil:
		return h.fail("the step's outcome is unknown, so it failed: %v", err)
	}
	if res.Reconnects > 0 {
		h.warn("the connection to the job's pod %s/%s broke %d times while the step ran; the step ran on and its output resumed where it stopped, nothing lost or repeated",
			st.Namespace, st.Pod, res.Reconnects)
	}
	if meta := stepMetaScan(&args, h.Getenv); len(plan.fileCommands) > 0 || meta != nil {
		if err := collectFileCommands(ctx, h, c, pod, res.Offset, plan.fileCommands, meta); err != nil {
			return h.fail("the step ended with exit code %d, but its file commands (GITHUB_ENV, GITHUB_OUTPUT, ...) could not be copied back to the runner: %v", res.ExitCode, err)
		}
	}
	switch {
	case res.ExitCode == 0:
		if len(plan.actions) > 0 {
			return recordActions(h, st, plan.actions, in.ResponseFile)
		}
		return 0
	case res.ExitCode > 0 && res.ExitCode < 256:
		return res.ExitCode
	}
	return 1
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
	// State records them once the step succeeded).
	actions []string
}

// planStep builds the step's job: every runner-host file the step needs
// under TempDir (the script named in its arguments, the file-command
// files) and the event payload are delivered as files, and a wrapper
// script copies them into place, changes into the working directory,
// exports the environment and PATH and execs the entry point. The action
// directories the step needs that are not in delivered (State.Actions) are
// delivered too (deliverActions).
func planStep(args *ScriptStepArgs, runnerTemp string, delivered []string, warn func(string, ...any)) (*stepPlan, error) {
	if args.EntryPoint == "" {
		return nil, errors.New("the step has no entryPoint")
	}
	if err := checkWorkingDirectory(args.WorkingDirectory); err != nil {
		return nil, err
	}
	argv, err := splitArgs(args.EntryPointArgs)
	if err != nil {
		return nil, err
	}
	id := client.NewJobID("step")
	plan := &stepPlan{job: client.Job{ID: id}}
	var w strings.Builder
	w.WriteString("#!/bin/sh\n# tether actions: one run_script_step\n")
	w.WriteString(failFunc)
	deliver := func(container string, content []byte) {
		addDelivery(&plan.job, &w, container, content, 0o700)
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
	if err := deliverActions(plan, &w, args, argv, runnerTemp, delivered); err != nil {
		return nil, err
	}
	if args.WorkingDirectory != "" {
		fmt.Fprintf(&w, "cd %s || fail %s\n", shellQuote(args.WorkingDirectory),
			shellQuote("cannot change to the working directory "+args.WorkingDirectory))
	}
	names := make([]string, 0, len(args.EnvironmentVariables))
	for k := range args.EnvironmentVariables {
		names = append(names, k)
	}
	slices.Sort(names)
	var viaEnv []string // names a shell cannot export (INPUT_FETCH-DEPTH): set by env(1)
	for _, k := range names {
		if !envName.MatchString(k) {
			if !envOnlyName.MatchString(k) {
				warn("the step's variable %q is not a valid variable name: it is not set", k)
			} else {
				viaEnv = append(viaEnv, shellQuote(k+"="+args.EnvironmentVariables[k]))
			}
			continue
		}
		fmt.Fprintf(&w, "export %s=%s\n", k, shellQuote(args.EnvironmentVariables[k]))
	}
	if len(args.PrependPath) > 0 {
		fmt.Fprintf(&w, "export PATH=%s:\"$PATH\"\n", shellQuote(strings.Join(args.PrependPath, ":")))
	}
	w.WriteString("exec ")
	if len(viaEnv) > 0 {
		w.WriteString("env " + strings.Join(viaEnv, " ") + " ")
	}
	w.WriteString(shellQuote(args.EntryPoint))
	for _, a := range argv {
		w.WriteString(" " + shellQuote(a))
	}
	w.WriteString("\n")
	wrapper := kube.FilesDir + "/step.sh"
	plan.job.Files = append(plan.job.Files, client.File{Path: wrapper, Content: []byte(w.String()), Mode: 0o700})
	plan.job.Scripts = []string{wrapper}
	return plan, nil
}
