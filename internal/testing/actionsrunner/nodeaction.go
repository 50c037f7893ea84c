package actionsrunner

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Container paths of the runner's externals and downloaded actions
// (ContainerOperationProvider.cs: <externals> → /__e, _work/_actions →
// /__w/_actions).
const (
	containerExternals = "/__e"
	containerActions   = "/__w/_actions"
)

// DownloadAction puts the action in directory src where the runner's
// ActionManager.cs downloads a repository action before the job's
// containers start: _work/_actions/<owner>/<repo>/<ref>, followed by the
// watermark file <ref>.completed.
func (r *Runner) DownloadAction(src, nameWithOwner, ref string) error {
	dst := filepath.Join(r.Work, "_actions", filepath.FromSlash(nameWithOwner), filepath.FromSlash(ref))
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		return fmt.Errorf("download the action %s@%s: %w", nameWithOwner, ref, err)
	}
	return os.WriteFile(dst+".completed", []byte("done"), 0o644)
}

// NodeStep is one stage (main or post) of a JavaScript action step.
type NodeStep struct {
	// Action and Ref name the downloaded action (owner/repo, ref).
	Action, Ref string
	// Script is runs.main or runs.post of its action.yml, relative to the
	// action's directory.
	Script string
	// Inputs are the step's with: (with defaults applied by the caller).
	Inputs map[string]string
	// Env is the step's env: (on top of the job's).
	Env map[string]string
	// State is the action's saved state (the main stage's GITHUB_STATE),
	// given to its post stage as STATE_<name>.
	State map[string]string
}

// RunNode runs a JavaScript action's stage as NodeScriptActionHandler.cs
// does through ContainerStepHost (StepHost.cs) with container hooks: the
// inputs as INPUT_<NAME> (upper case, spaces as _), the saved state as
// STATE_<name>, GITHUB_ACTION_PATH, the file-command files; the entry point
// is the externals' node (node20, or node20_alpine when prepare_job
// answered isAlpine) and its argument the script's container path in
// double quotes (the runner's "{0}" format, then split on spaces), the
// working directory the workspace. Afterwards the file commands are
// processed; it returns the state the stage saved (GITHUB_STATE).
func (r *Runner) RunNode(ctx context.Context, s NodeStep) (Result, map[string]string, error) {
	hostDir := filepath.Join(r.Work, "_actions", filepath.FromSlash(s.Action), filepath.FromSlash(s.Ref))
	return r.runNode(ctx, s, hostDir, containerActions+"/"+s.Action+"/"+s.Ref)
}

// runNode runs s of the action whose directory is hostDir on the runner's
// disk and actionPath in the container (StepHost.ResolvePathForStepHost).
func (r *Runner) runNode(ctx context.Context, s NodeStep, hostDir, actionPath string) (Result, map[string]string, error) {
	// NodeScriptActionHandler.cs: ArgUtil.Directory(ActionDirectory),
	// ArgUtil.File(target).
	if st, err := os.Stat(hostDir); err != nil || !st.IsDir() {
		return Result{}, nil, fmt.Errorf("the runner fails the step: Directory not found: '%s'", hostDir)
	}
	if _, err := os.Stat(filepath.Join(hostDir, filepath.FromSlash(s.Script))); err != nil {
		return Result{}, nil, fmt.Errorf("the action's script (the runner checks it exists before running it): %w", err)
	}
	env := maps.Clone(r.JobEnv)
	maps.Copy(env, s.Env)
	for k, v := range s.Inputs {
		env["INPUT_"+strings.ToUpper(strings.ReplaceAll(k, " ", "_"))] = v
	}
	for k, v := range s.State {
		env["STATE_"+k] = v
	}
	if err := r.initializeFiles(env); err != nil {
		return Result{}, nil, err
	}
	env["GITHUB_ACTION_PATH"] = actionPath
	if s.Action != "" {
		env["GITHUB_ACTION_REPOSITORY"] = s.Action
		env["GITHUB_ACTION_REF"] = s.Ref
	}
	env["GITHUB_WORKSPACE"] = r.Workspace()
	env["RUNNER_TEMP"] = containerTemp
	env["GITHUB_EVENT_PATH"] = "/github/workflow/event.json"
	env["CI"], env["GITHUB_ACTIONS"] = "true", "true"
	node := "node20"
	if r.IsAlpine {
		node = "node20_alpine"
	}
	target := strings.ReplaceAll(actionPath+"/"+s.Script, `"`, `\"`)
	prepend := slices.Clone(r.PrependPath)
	slices.Reverse(prepend)
	args := map[string]any{
		"entryPoint": containerExternals + "/" + node + "/bin/node", "entryPointArgs": strings.Split(`"`+target+`"`, " "),
		"environmentVariables": env, "prependPath": prepend, "workingDirectory": r.Workspace(),
	}
	res, err := r.Invoke(ctx, "run_script_step", args)
	if err != nil {
		return res, nil, err
	}
	state, err := parseEnvFile(r.readFileCommand("save_state_"))
	if err != nil {
		return res, nil, fmt.Errorf("GITHUB_STATE: %w", err)
	}
	return res, state, r.processFiles()
}

// readFileCommand reads the current step's file-command file of prefix.
func (r *Runner) readFileCommand(prefix string) string {
	b, _ := os.ReadFile(filepath.Join(r.Temp, "_runner_file_commands", prefix+r.suffix))
	return string(b)
}
