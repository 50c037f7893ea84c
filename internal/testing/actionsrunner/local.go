package actionsrunner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// LocalStep is a step `uses: ./path`: an action of the workspace.
type LocalStep struct {
	// Path is the uses: path without its "./" (.github/actions/x).
	Path string
	// Inputs are the step's with: (the action's input defaults fill in the
	// rest).
	Inputs map[string]string
	// Env is the step's env: (on top of the job's).
	Env map[string]string
}

// localManifest is what the stand-in reads of an action.yml.
type localManifest struct {
	Inputs map[string]struct {
		Default string `json:"default"`
	} `json:"inputs"`
	Runs struct {
		Using      string   `json:"using"`
		Main       string   `json:"main"`
		Image      string   `json:"image"`
		Entrypoint string   `json:"entrypoint"`
		Args       []string `json:"args"`
		Steps      []struct {
			Run   string            `json:"run"`
			Shell string            `json:"shell"`
			Env   map[string]string `json:"env"`
		} `json:"steps"`
	} `json:"runs"`
}

// RunLocal runs a local action as the runner does: ActionManager.cs
// LoadAction reads action.yml (else action.yaml) from the runner's own
// copy of the workspace (github.workspace + path), else treats a
// Dockerfile there as a container action, else fails ("Can't find
// 'action.yml', 'action.yaml' or 'Dockerfile' under ..."); then the
// handler of runs.using: a composite action's run: steps (bash only here)
// with GITHUB_ACTION_PATH, a JavaScript action's main through the hook
// (runNode: the runner checks the script exists on its disk), a container
// action (docker://image, or a Dockerfile the runner checks exists on its
// disk). It returns one Result per hook invocation.
func (r *Runner) RunLocal(ctx context.Context, s LocalStep) ([]Result, error) {
	rel := path.Clean(strings.TrimPrefix(s.Path, "./"))
	hostDir := filepath.Join(r.Work, r.Repo, r.Repo, filepath.FromSlash(rel))
	actionPath := r.Workspace() + "/" + rel
	var m localManifest
	b, err := os.ReadFile(filepath.Join(hostDir, "action.yml"))
	if errors.Is(err, os.ErrNotExist) {
		b, err = os.ReadFile(filepath.Join(hostDir, "action.yaml"))
	}
	switch {
	case err == nil:
		if err := yaml.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("the action's metadata: %w", err)
		}
	case errors.Is(err, os.ErrNotExist):
		for _, name := range []string{"Dockerfile", "dockerfile"} {
			if _, err := os.Stat(filepath.Join(hostDir, name)); err == nil {
				m.Runs.Using, m.Runs.Image = "docker", name
			}
		}
		if m.Runs.Using == "" {
			return nil, fmt.Errorf("the runner fails the step: Can't find 'action.yml', 'action.yaml' or 'Dockerfile' under '%s'. Did you forget to run actions/checkout before running your local action?", hostDir)
		}
	default:
		return nil, err
	}
	inputs := map[string]string{}
	for k, v := range m.Inputs {
		if v.Default != "" {
			inputs[k] = v.Default
		}
	}
	maps.Copy(inputs, s.Inputs)
	switch using := strings.ToLower(m.Runs.Using); {
	case using == "composite":
		var results []Result
		for i, st := range m.Runs.Steps {
			if st.Shell != "bash" {
				return results, fmt.Errorf("composite step %d: the stand-in runs shell: bash only, not %q", i, st.Shell)
			}
			env := maps.Clone(s.Env)
			if env == nil {
				env = map[string]string{}
			}
			maps.Copy(env, st.Env)
			env["GITHUB_ACTION_PATH"] = actionPath
			res, err := r.RunScript(ctx, Step{Script: st.Run, Env: env})
			results = append(results, res)
			if err != nil || res.ExitCode != 0 {
				return results, err
			}
		}
		return results, nil
	case strings.HasPrefix(using, "node"):
		res, _, err := r.runNode(ctx, NodeStep{Script: m.Runs.Main, Inputs: inputs, Env: s.Env}, hostDir, actionPath)
		return []Result{res}, err
	case using == "docker":
		c := ContainerStep{EntryPoint: m.Runs.Entrypoint, Args: m.Runs.Args, Inputs: inputs, Env: s.Env}
		if img, ok := strings.CutPrefix(m.Runs.Image, "docker://"); ok {
			c.Image = img
		} else {
			// ContainerActionHandler.cs: ArgUtil.File(dockerFile).
			c.Dockerfile = filepath.Join(hostDir, filepath.FromSlash(m.Runs.Image))
			if _, err := os.Stat(c.Dockerfile); err != nil {
				return nil, fmt.Errorf("the runner fails the step: File not found: '%s'", c.Dockerfile)
			}
		}
		res, err := r.RunContainer(ctx, c)
		return []Result{res}, err
	default:
		return nil, fmt.Errorf("the stand-in does not run actions with runs.using %q", m.Runs.Using)
	}
}
