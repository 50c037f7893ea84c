// Package actionsrunner is a stand-in for the GitHub Actions runner as it
// drives a container hook, for tests of `tether actions`.
//
// It follows actions/runner's source for everything it sends, runs and
// expects:
//
//   - src/Runner.Worker/Container/ContainerHooks/ContainerHookManager.cs:
//     the response file (_work/_temp/_runner_hook_responses/<guid>.json,
//     created empty before the hook starts, read after exit 0 and
//     deleted), the state carried from one response to the next
//     command, isAlpine required when the job has a container, services
//     matched by position;
//
//   - ContainerInfo.cs: a volumes: entry split into a MountVolume
//     (Volume);
//
//   - HookInput.cs and HookResponse.cs: the input's camelCase shape with
//     nulls, entryPointArgs split on single spaces, the response read
//     case-insensitively (an empty file is no response);
//
//   - src/Runner.Sdk/ProcessInvoker.cs and Handlers/ScriptHandler.cs,
//     ScriptHandlerHelpers.cs: a .sh hook run as `bash -e <path>` with
//     one JSON line on stdin, then stdin closed; a cancel sends SIGINT,
//     waits 7.5 s, SIGTERM, waits 2.5 s, then SIGKILLs the process group;
//     a `run:` step's script written into the runner's own _work/_temp
//     and run as `bash --noprofile --norc -e -o pipefail <path>`;
//
//   - FileCommandManager.cs: fresh empty file-command files before each
//     step (set_env_, add_path_, set_output_, save_state_,
//     step_summary_ + a new guid), processed after it: GITHUB_ENV
//     (NAME=value and NAME<<DELIMITER heredocs) into the job's env,
//     GITHUB_PATH lines into the prepend path (sent most recent first).
//
//   - Handlers/Handler.cs (AddPrependPathToEnvironment) and
//     ScriptHandler.cs: the hook's environment is the runner's with the
//     job's prepend path before PATH, GITHUB_* and RUNNER_* with
//     runner-host paths; its working directory the workspace.
//
// It records the hook's stdout and stderr as raw bytes, and also as the
// runner's log shows them (StepLog: line by line, workflow commands
// interpreted, secrets masked), both streams read as they arrive into one
// log as ProcessInvoker.cs reads them (streams.go).
package actionsrunner

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Cancel timing of ProcessInvoker.cs.
const (
	SigintTimeout  = 7500 * time.Millisecond
	SigtermTimeout = 2500 * time.Millisecond
)

// Container paths of the runner's directories (ContainerInfo.cs).
const (
	containerWork = "/__w"
	containerTemp = "/__w/_temp"
)

// fileCommands are FileCommandManager.cs's files: variable → prefix.
var fileCommands = [][2]string{
	{"GITHUB_PATH", "add_path_"},
	{"GITHUB_ENV", "set_env_"},
	{"GITHUB_OUTPUT", "set_output_"},
	{"GITHUB_STATE", "save_state_"},
	{"GITHUB_STEP_SUMMARY", "step_summary_"},
}

// Runner is one job's runner: its _work directory and what the job
// gathered (state, env, prepend path).
type Runner struct {
	// Launcher is the hook file (ACTIONS_RUNNER_CONTAINER_HOOKS).
	Launcher string
	// Env is the hook's environment (the runner process's).
	Env []string
	// Root is the runner's directory; Work its _work, Temp _work/_temp.
	Root, Work, Temp string
	// Repo names the workspace (_work/<repo>/<repo>).
	Repo string
	// Tee, if set, also receives the hook's stdout as it arrives (it must
	// be safe to write from another goroutine than the test's).
	Tee io.Writer
	// JobRegistry, if set, is the job container's registry credentials
	// (username, password, serverUrl) in prepare_job.
	JobRegistry map[string]string
	// JobFields, if set, are more HookContainer keys of the job container
	// in prepare_job, as the runner fills them from the workflow's
	// container: (createOptions from options:, userMountVolumes from
	// volumes: through Volume).
	JobFields map[string]any
	// Die makes the end of an invocation's context SIGKILL the hook's
	// whole process group at once: the runner dying with its container,
	// not its cancel.
	Die bool

	// State is the latest response's state (nil before prepare_job).
	State json.RawMessage
	// IsAlpine is prepare_job's answer: JavaScript actions run the
	// externals' node20_alpine instead of node20 (nodeaction.go).
	IsAlpine bool
	// JobEnv is the job's env gathered from GITHUB_ENV.
	JobEnv map[string]string
	// PrependPath is the job's prepend path, oldest first (as the runner
	// keeps it; sent reversed).
	PrependPath []string
	// Outputs are the last step's outputs from GITHUB_OUTPUT.
	Outputs map[string]string
	// Summary is the last step's GITHUB_STEP_SUMMARY content.
	Summary []byte
	// Log is the job's log as the runner shows the hook's output (both
	// streams line by line as they arrived, see hookStreams), masks
	// included.
	Log StepLog

	suffix string
}

// Result is one hook invocation's outcome.
type Result struct {
	ExitCode       int
	Stdout, Stderr []byte
	// Response is the response file's content ("" none).
	Response string
	// Log are the lines of this invocation in the runner's log (StepLog).
	Log []string
}

// New makes a runner directory under root with the _work layout the
// runner has when a job starts, and the hook's environment: env plus
// RUNNER_TEMP, RUNNER_WORKSPACE, GITHUB_WORKSPACE (runner-host paths).
func New(root, launcher, repo string, env []string) (*Runner, error) {
	r := &Runner{Launcher: launcher, Root: root, Work: filepath.Join(root, "_work"), Repo: repo, JobEnv: map[string]string{}}
	r.Temp = filepath.Join(r.Work, "_temp")
	for _, d := range []string{
		filepath.Join(r.Temp, "_runner_hook_responses"), filepath.Join(r.Temp, "_runner_file_commands"),
		filepath.Join(r.Temp, "_github_home"), filepath.Join(r.Temp, "_github_workflow"),
		filepath.Join(r.Work, "_actions"), filepath.Join(r.Work, "_tool"), filepath.Join(r.Work, repo, repo),
	} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(r.Temp, "_github_workflow", "event.json"), []byte(`{"ref":"refs/heads/main"}`), 0o644); err != nil {
		return nil, err
	}
	r.Env = append(slices.Clone(env),
		"RUNNER_TEMP="+r.Temp, "RUNNER_WORKSPACE="+filepath.Join(r.Work, repo),
		"GITHUB_WORKSPACE="+filepath.Join(r.Work, repo, repo), "GITHUB_ACTIONS=true", "CI=true",
		"GITHUB_EVENT_PATH="+filepath.Join(r.Temp, "_github_workflow", "event.json"),
		"RUNNER_TOOL_CACHE="+filepath.Join(r.Work, "_tool"))
	return r, nil
}

// Workspace is the workspace's container path.
func (r *Runner) Workspace() string { return containerWork + "/" + r.Repo + "/" + r.Repo }

// guid returns a random GUID-like string.
func guid() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Invoke runs the hook for one command as ContainerHookManager does:
// an empty response file, the input on stdin, then the response read
// (after exit 0) and deleted; its state, if any, replaces r.State.
func (r *Runner) Invoke(ctx context.Context, command string, args any) (Result, error) {
	resp := filepath.Join(r.Temp, "_runner_hook_responses", guid()+".json")
	if err := os.WriteFile(resp, nil, 0o644); err != nil {
		return Result{}, err
	}
	defer os.Remove(resp)
	state := r.State
	if state == nil {
		state = json.RawMessage("null")
	}
	input, err := marshalInput(command, resp, args, state)
	if err != nil {
		return Result{}, err
	}
	res, err := r.Start(ctx, input)
	if err != nil || res.ExitCode != 0 {
		return res, err
	}
	b, err := os.ReadFile(resp)
	if err != nil {
		return res, fmt.Errorf("read the response file: %w", err)
	}
	res.Response = string(b)
	if len(bytes.TrimSpace(b)) == 0 {
		return res, nil
	}
	var parsed struct{ State json.RawMessage }
	if err := json.Unmarshal(b, &parsed); err != nil {
		return res, fmt.Errorf("the response file is not JSON: %w", err)
	}
	if len(parsed.State) > 0 && string(parsed.State) != "null" {
		// HookResponse.cs: State is a JObject; anything else fails the
		// job when Newtonsoft.Json reads the response.
		if parsed.State[0] != '{' {
			return res, fmt.Errorf("the response's state is not an object: %s", parsed.State)
		}
		r.State = parsed.State
	}
	return res, nil
}

// Start runs the launcher with `bash -e`, writes input on its stdin and
// closes it, and waits for it; ctx's end cancels it the runner's way.
func (r *Runner) Start(ctx context.Context, input []byte) (Result, error) {
	cmd := exec.Command("bash", "-e", r.Launcher)
	cmd.Env = r.hookEnv()
	cmd.Dir = filepath.Join(r.Work, r.Repo, r.Repo)
	cmd.Stdin = bytes.NewReader(input)
	var stdout, stderr bytes.Buffer
	n := len(r.Log.Lines)
	streams := newHookStreams(&r.Log)
	outLines, errLines := streams.writers()
	cmd.Stdout, cmd.Stderr = io.MultiWriter(&stdout, outLines), io.MultiWriter(&stderr, errLines)
	if r.Tee != nil {
		cmd.Stdout = io.MultiWriter(&stdout, outLines, r.Tee)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		streams.finish()
		return Result{}, fmt.Errorf("start the hook: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		if r.Die {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			err = <-done
			break
		}
		err = cancel(cmd, done)
	}
	// Wait has copied both streams to their ends.
	outLines.Close()
	errLines.Close()
	streams.finish()
	res := Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: exitCode(cmd.ProcessState)}
	res.Log = slices.Clone(r.Log.Lines[n:])
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return res, err
	}
	return res, nil
}

// cancel stops the hook as ProcessInvoker does when the job is cancelled.
func cancel(cmd *exec.Cmd, done <-chan error) error {
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-done:
		return err
	case <-time.After(SigintTimeout):
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		return err
	case <-time.After(SigtermTimeout):
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return <-done
}

// Container is the runner's HookContainer, all keys present.
func Container(image string, env map[string]string, ports []string) map[string]any {
	if env == nil {
		env = map[string]string{}
	}
	if ports == nil {
		ports = []string{}
	}
	return map[string]any{
		"image": image, "dockerfile": nil, "entryPointArgs": []string{}, "entryPoint": nil,
		"workingDirectory": nil, "createOptions": nil, "environmentVariables": env,
		"portMappings": ports, "registry": nil, "systemMountVolumes": []any{}, "userMountVolumes": []any{},
	}
}

// Volume is one of a container's userMountVolumes from a workflow's
// volumes: entry, split as ContainerInfo.cs ParseVolumes splits it:
// source:target:ro, source:target, target:ro or target.
func Volume(value string) map[string]any {
	m := map[string]any{"userProvidedValue": value, "sourceVolumePath": nil, "targetVolumePath": value, "readOnly": false}
	switch parts := strings.Split(value, ":"); {
	case len(parts) == 3:
		m["sourceVolumePath"], m["targetVolumePath"], m["readOnly"] = parts[0], parts[1], parts[2] == "ro"
	case len(parts) == 2 && parts[1] == "ro":
		m["targetVolumePath"], m["readOnly"] = parts[0], true
	case len(parts) == 2:
		m["sourceVolumePath"], m["targetVolumePath"] = parts[0], parts[1]
	}
	return m
}

// PrepareJob runs prepare_job for a job container of image (its env gets
// HOME=/github/home, its working directory the workspace) and services,
// and checks the response as the runner does.
func (r *Runner) PrepareJob(ctx context.Context, image string, env map[string]string, services []map[string]any) (Result, error) {
	job := Container(image, env, nil)
	job["environmentVariables"].(map[string]string)["HOME"] = "/github/home"
	job["workingDirectory"] = r.Workspace()
	job["systemMountVolumes"] = r.JobMounts()
	if r.JobRegistry != nil {
		job["registry"] = r.JobRegistry
	}
	for k, v := range r.JobFields {
		job[k] = v
	}
	if services == nil {
		services = []map[string]any{}
	}
	res, err := r.Invoke(ctx, "prepare_job", map[string]any{"container": job, "services": services})
	if err != nil || res.ExitCode != 0 {
		return res, err
	}
	var resp struct {
		IsAlpine *bool
		Context  *struct {
			Services json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(res.Response), &resp); err != nil {
		return res, fmt.Errorf("the response: %w", err)
	}
	if resp.IsAlpine == nil {
		return res, errors.New("the response has no isAlpine: the runner fails the job (\"The property 'isAlpine' is required\")")
	}
	r.IsAlpine = *resp.IsAlpine
	if resp.Context == nil {
		return res, nil
	}
	// ContainerHookManager.cs UpdateJobContext: a context's services
	// (absent: an empty list) are counted and each one's ports iterated.
	if string(resp.Context.Services) == "null" {
		return res, errors.New("the response's context.services is null: the runner fails the job (NullReferenceException)")
	}
	var svcs []struct{ Ports map[string]string }
	if len(resp.Context.Services) > 0 {
		if err := json.Unmarshal(resp.Context.Services, &svcs); err != nil {
			return res, fmt.Errorf("the response's context.services: %w", err)
		}
	}
	if len(svcs) > len(services) {
		return res, errors.New("the response names more services than the job has")
	}
	for i, s := range svcs {
		if s.Ports == nil {
			return res, fmt.Errorf("service %d of the response has no ports object", i)
		}
	}
	return res, nil
}

// JobMounts are the job container's system mounts: ContainerInfo.cs's
// docker socket, then ContainerOperationProvider.cs
// MountWellKnownDirectories: _work, the externals (read-only), _temp,
// _actions, _tool, _temp/_github_home and _temp/_github_workflow, each at
// its container path.
func (r *Runner) JobMounts() []any {
	mount := func(src, dst string, ro bool) map[string]any {
		return map[string]any{"userProvidedValue": nil, "sourceVolumePath": src, "targetVolumePath": dst, "readOnly": ro}
	}
	return []any{
		mount("/var/run/docker.sock", "/var/run/docker.sock", false),
		mount(r.Work, containerWork, false),
		mount(filepath.Join(r.Root, "externals"), containerExternals, true),
		mount(r.Temp, containerTemp, false),
		mount(filepath.Join(r.Work, "_actions"), containerActions, false),
		mount(filepath.Join(r.Work, "_tool"), containerWork+"/_tool", false),
		mount(filepath.Join(r.Temp, "_github_home"), "/github/home", false),
		mount(filepath.Join(r.Temp, "_github_workflow"), "/github/workflow", false),
	}
}

// Step is one `run:` step.
type Step struct {
	// Script is the step's run: text.
	Script string
	// Env is the step's env: (on top of the job's).
	Env map[string]string
	// WorkingDirectory is the container path ("" the workspace).
	WorkingDirectory string
}

// RunScript runs a `run:` step as the runner does with a bash shell: the
// script and fresh file-command files in its own _temp, the hook called
// with run_script_step, then the file commands processed.
func (r *Runner) RunScript(ctx context.Context, s Step) (Result, error) {
	name := guid() + ".sh"
	if err := os.WriteFile(filepath.Join(r.Temp, name), []byte(s.Script), 0o755); err != nil {
		return Result{}, err
	}
	env := map[string]string{}
	for k, v := range r.JobEnv {
		env[k] = v
	}
	for k, v := range s.Env {
		env[k] = v
	}
	if err := r.initializeFiles(env); err != nil {
		return Result{}, err
	}
	env["GITHUB_WORKSPACE"] = r.Workspace()
	env["RUNNER_TEMP"] = containerTemp
	env["GITHUB_EVENT_PATH"] = "/github/workflow/event.json"
	env["CI"], env["GITHUB_ACTIONS"] = "true", "true"
	wd := s.WorkingDirectory
	if wd == "" {
		wd = r.Workspace()
	}
	prepend := slices.Clone(r.PrependPath)
	slices.Reverse(prepend)
	// ScriptHandlerHelpers.cs's bash format, split on single spaces with
	// each piece trimmed and empty pieces kept, as ContainerHookManager.cs
	// RunScriptStepAsync does.
	argString := "--noprofile --norc -e -o pipefail " + containerTemp + "/" + name
	var argList []string
	for _, a := range strings.Split(argString, " ") {
		argList = append(argList, strings.TrimSpace(a))
	}
	args := map[string]any{
		"entryPoint": "bash", "entryPointArgs": argList,
		"environmentVariables": env, "prependPath": prepend, "workingDirectory": wd,
	}
	res, err := r.Invoke(ctx, "run_script_step", args)
	if err != nil {
		return res, err
	}
	return res, r.processFiles()
}

// initializeFiles creates the step's empty file-command files under a new
// suffix (deleting the previous step's) and sets their container paths.
func (r *Runner) initializeFiles(env map[string]string) error {
	dir := filepath.Join(r.Temp, "_runner_file_commands")
	old := r.suffix
	r.suffix = guid()
	for _, fc := range fileCommands {
		if old != "" {
			_ = os.Remove(filepath.Join(dir, fc[1]+old))
		}
		if err := os.WriteFile(filepath.Join(dir, fc[1]+r.suffix), nil, 0o644); err != nil {
			return err
		}
		env[fc[0]] = containerTemp + "/_runner_file_commands/" + fc[1] + r.suffix
	}
	return nil
}

// processFiles applies the step's file commands (FileCommandManager.cs).
func (r *Runner) processFiles() error {
	dir := filepath.Join(r.Temp, "_runner_file_commands")
	read := func(prefix string) string {
		b, _ := os.ReadFile(filepath.Join(dir, prefix+r.suffix))
		return string(b)
	}
	for _, line := range strings.Split(read("add_path_"), "\n") {
		if line == "" {
			continue
		}
		r.PrependPath = slices.DeleteFunc(r.PrependPath, func(p string) bool { return p == line })
		r.PrependPath = append(r.PrependPath, line)
	}
	env, err := parseEnvFile(read("set_env_"))
	if err != nil {
		return fmt.Errorf("GITHUB_ENV: %w", err)
	}
	for k, v := range env {
		r.JobEnv[k] = v
	}
	if r.Outputs, err = parseEnvFile(read("set_output_")); err != nil {
		return fmt.Errorf("GITHUB_OUTPUT: %w", err)
	}
	r.Summary = []byte(read("step_summary_"))
	return nil
}

// parseEnvFile parses NAME=value lines and NAME<<DELIMITER heredocs.
func parseEnvFile(text string) (map[string]string, error) {
	out := map[string]string{}
	lines := strings.SplitAfter(text, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSuffix(lines[i], "\n")
		if line == "" {
			continue
		}
		eq, hd := strings.Index(line, "="), strings.Index(line, "<<")
		switch {
		case eq >= 0 && (hd < 0 || eq < hd):
			out[line[:eq]] = line[eq+1:]
		case hd >= 0:
			name, delim := line[:hd], line[hd+2:]
			if name == "" || delim == "" {
				return nil, fmt.Errorf("invalid format %q", line)
			}
			var value []string
			for i++; ; i++ {
				if i >= len(lines) {
					return nil, fmt.Errorf("matching delimiter %q not found", delim)
				}
				l := strings.TrimSuffix(lines[i], "\n")
				if l == delim {
					break
				}
				value = append(value, l)
			}
			out[name] = strings.Join(value, "\n")
		default:
			return nil, fmt.Errorf("invalid format %q", line)
		}
	}
	return out, nil
}

// CleanupJob runs cleanup_job.
func (r *Runner) CleanupJob(ctx context.Context) (Result, error) {
	return r.Invoke(ctx, "cleanup_job", map[string]any{})
}
