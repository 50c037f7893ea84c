package actionsrunner

import (
	"context"
	"maps"
	"path/filepath"
	"strings"
)

// ContainerStep is one container action step (runs.using: docker) or a
// `uses: docker://IMAGE` step.
type ContainerStep struct {
	// Image is the action's image, docker:// already stripped; "" with
	// Dockerfile set for an action built from its Dockerfile.
	Image string
	// Dockerfile is the runner-host path of the action's Dockerfile.
	Dockerfile string
	// EntryPoint is action.yml's runs.entrypoint ("" none: the image's
	// own ENTRYPOINT).
	EntryPoint string
	// Args are action.yml's runs.args, evaluated.
	Args []string
	// Inputs are the step's with: inputs (INPUT_<NAME>).
	Inputs map[string]string
	// Env is the step's env: (on top of the job's).
	Env map[string]string
	// Registry, if set, is the image's registry credentials (username,
	// password, serverUrl).
	Registry map[string]string
}

// containerArgs joins runs.args as ContainerActionHandler.cs does (each
// argument in double quotes, inner quotes escaped, " " before each) and
// splits the string on single spaces dropping empty pieces, as
// HookInput.cs does.
func containerArgs(args []string) []string {
	var b strings.Builder
	for _, a := range args {
		b.WriteString(` "` + strings.ReplaceAll(a, `"`, `\"`) + `"`)
	}
	out := []string{}
	for _, p := range strings.Split(b.String(), " ") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// RunContainer runs a container step as the runner does through the hook
// (ContainerActionHandler.cs, ContainerHookManager.cs
// RunContainerStepAsync): fresh file-command files, the step's env with
// the runner's paths translated to /github/..., INPUT_* from the inputs,
// HOME=/github/home, the system mounts, working directory
// /github/workspace, then run_container_step and the file commands
// processed.
func (r *Runner) RunContainer(ctx context.Context, s ContainerStep) (Result, error) {
	env := map[string]string{}
	maps.Copy(env, r.JobEnv)
	maps.Copy(env, s.Env)
	for k, v := range s.Inputs {
		env["INPUT_"+strings.ToUpper(strings.ReplaceAll(k, " ", "_"))] = v
	}
	if err := r.initializeFiles(env); err != nil {
		return Result{}, err
	}
	// The file-command files as the container step sees them.
	for k, v := range env {
		if rel, ok := strings.CutPrefix(v, containerTemp+"/_runner_file_commands/"); ok {
			env[k] = "/github/file_commands/" + rel
		}
	}
	env["HOME"] = "/github/home"
	env["GITHUB_WORKSPACE"] = "/github/workspace"
	env["GITHUB_EVENT_PATH"] = "/github/workflow/event.json"
	env["RUNNER_TEMP"] = "/github/runner_temp"
	env["CI"], env["GITHUB_ACTIONS"] = "true", "true"
	mount := func(src, dst string) map[string]any {
		return map[string]any{"userProvidedValue": nil, "sourceVolumePath": src, "targetVolumePath": dst, "readOnly": false}
	}
	c := Container(s.Image, env, nil)
	if s.Image == "" {
		c["image"] = nil
		c["dockerfile"] = s.Dockerfile
	}
	if s.EntryPoint != "" {
		c["entryPoint"] = s.EntryPoint
	}
	c["entryPointArgs"] = containerArgs(s.Args)
	c["workingDirectory"] = "/github/workspace"
	if s.Registry != nil {
		c["registry"] = s.Registry
	}
	c["systemMountVolumes"] = []any{
		mount("/var/run/docker.sock", "/var/run/docker.sock"),
		mount(r.Temp, "/github/runner_temp"),
		mount(filepath.Join(r.Temp, "_github_home"), "/github/home"),
		mount(filepath.Join(r.Temp, "_github_workflow"), "/github/workflow"),
		mount(filepath.Join(r.Temp, "_runner_file_commands"), "/github/file_commands"),
		mount(filepath.Join(r.Work, r.Repo, r.Repo), "/github/workspace"),
	}
	res, err := r.Invoke(ctx, "run_container_step", c)
	if err != nil {
		return res, err
	}
	return res, r.processFiles()
}
