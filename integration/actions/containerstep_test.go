package actions

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/actions/hookapi"
	"github.com/tether-ci/tether/integration/actions/internal/shell"
	"github.com/tether-ci/tether/integration/actions/internal/transfer"
)

// testShim is a step's shim as shimOfPod makes it.
var testShim = stepShim{args: []string{"--spool-dir=/tether/spool-step-3"}, mounts: []corev1.VolumeMount{{Name: "tether", MountPath: "/tether"}}}

// stepArgs are run_container_step's args as ContainerActionHandler.cs
// builds them for an action with runs.args and runs.entrypoint.
func stepArgs() *Container {
	return &Container{
		Image:            "alpine:3",
		EntryPoint:       "/entry.sh",
		EntryPointArgs:   []string{`"hello`, `world"`, `"it's"`, `""`},
		WorkingDirectory: StepWorkspace,
		EnvironmentVariables: map[string]string{
			"INPUT_WHO":     "me & you",
			"HOME":          "/github/home",
			"GITHUB_OUTPUT": "/github/file_commands/set_output_1",
			"bad name":      "x",
		},
		SystemMountVolumes: []hookapi.Mount{
			{SourceVolumePath: "/r/_work/repo/repo", TargetVolumePath: StepWorkspace},
			{SourceVolumePath: "/r/_work/_temp", TargetVolumePath: StepRunnerTemp},
		},
	}
}

// The ephemeral container: the image, the entry point as its command, the
// arguments shell-split, the working directory, the mounts of the job
// pod's volumes, the env only through the Secret.
func TestBuildContainerStep(t *testing.T) {
	var warnings []string
	warn := func(f string, a ...any) { warnings = append(warnings, fmt.Sprintf(f, a...)) }
	step, err := buildContainerStep(stepArgs(), "step-3", "pod-step-3-env", testShim, warn)
	if err != nil {
		t.Fatal(err)
	}
	c := step.container
	if c.Name != "step-3" || c.Image != "alpine:3" || c.WorkingDir != StepWorkspace {
		t.Fatalf("name %q image %q workingDir %q", c.Name, c.Image, c.WorkingDir)
	}
	// The shim is the command, stdin open for attach; the program
	// travels in its job command.
	if !reflect.DeepEqual(c.Command, []string{kube.ShimPath}) || !reflect.DeepEqual(c.Args, testShim.args) || !c.Stdin || c.StdinOnce || c.TTY {
		t.Fatalf("command %q args %q stdin %v/%v tty %v", c.Command, c.Args, c.Stdin, c.StdinOnce, c.TTY)
	}
	if len(c.Env) != 1 || c.Env[0].Name != "PWD" || c.Env[0].Value != StepWorkspace {
		t.Fatalf("the env is in the pod spec: %v", c.Env)
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "pod-step-3-env" {
		t.Fatalf("envFrom %+v", c.EnvFrom)
	}
	if string(step.env["INPUT_WHO"]) != "me & you" || string(step.env["HOME"]) != "/github/home" ||
		string(step.env["CI"]) != "true" || string(step.env["GITHUB_ACTIONS"]) != "true" || len(step.env) != 5 {
		t.Fatalf("secret data %q", step.env)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `"bad name"`) {
		t.Fatalf("warnings %q", warnings)
	}
	// Whole volumes (Kubernetes forbids subPath in ephemeral containers)
	// where the job container has them; links make the /github paths.
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		if m.SubPath != "" {
			t.Fatalf("mount %+v has a subPath", m)
		}
		mounts[m.MountPath] = m.Name
	}
	if want := map[string]string{WorkDir: workVolume, GitHubDir: githubVolume, "/tether": "tether"}; !reflect.DeepEqual(mounts, want) {
		t.Fatalf("mounts %v, want %v", mounts, want)
	}
	links := map[string]string{}
	for _, l := range stepLinks("repo/repo") {
		links[l.Link] = l.Target
	}
	wantLinks := map[string]string{
		StepWorkspace:       "/__w/repo/repo",
		StepFileCommandsDir: "/__w/_temp/_runner_file_commands",
		StepRunnerTemp:      "/__w/_temp",
	}
	if !reflect.DeepEqual(links, wantLinks) {
		t.Fatalf("links %v, want %v", links, wantLinks)
	}
}

// Without env of its own the step still gets the runner's GITHUB_ACTIONS
// and CI, through the Secret.
func TestBuildContainerStepNoEnv(t *testing.T) {
	args := &Container{Image: "x", EntryPointArgs: []string{"a", "b"}}
	step, err := buildContainerStep(args, "step-1", "s", testShim, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	if len(step.container.EnvFrom) != 1 || len(step.env) != 2 || step.container.WorkingDir != StepWorkspace || len(step.container.Env) != 1 {
		t.Fatalf("envFrom %v env %v workingDir %q", step.container.EnvFrom, step.env, step.container.WorkingDir)
	}
}

// A Dockerfile action, a step without image, broken quoting are refused
// with the reason.
func TestBuildContainerStepErrors(t *testing.T) {
	nop := func(string, ...any) {}
	_, err := buildContainerStep(&Container{Dockerfile: "/r/_work/_actions/o/a/v1/Dockerfile"}, "step-1", "s", testShim, nop)
	if !errors.Is(err, errDockerfile) || !strings.Contains(err.Error(), "docker://") {
		t.Fatalf("a Dockerfile step: %v", err)
	}
	if _, err := buildContainerStep(&Container{}, "step-1", "s", testShim, nop); err == nil {
		t.Fatal("a step without image was accepted")
	}
	if _, err := shell.SplitArgs([]string{`"open`}); err == nil {
		t.Fatal("an unterminated quote was accepted")
	}
}

// The workspace is found from the step's mount at /github/workspace, else
// the hook's GITHUB_WORKSPACE, relative to the runner's _work.
func TestWorkspaceSubPath(t *testing.T) {
	got, err := workspaceSubPath(stepArgs(), "/ignored", "/r/_work/_temp")
	if err != nil || got != "repo/repo" {
		t.Fatalf("from the mount: %q, %v", got, err)
	}
	got, err = workspaceSubPath(&Container{}, "/r/_work/a/b/", "/r/_work/_temp")
	if err != nil || got != "a/b" {
		t.Fatalf("from GITHUB_WORKSPACE: %q, %v", got, err)
	}
	for _, ws := range []string{"", "/elsewhere/a/a", "/r/_work", "/r/_work/_temp/.."} {
		if _, err := workspaceSubPath(&Container{}, ws, "/r/_work/_temp"); err == nil {
			t.Fatalf("workspace %q was accepted", ws)
		}
	}
}

// Each step gets a new name, also when a name is taken.
func TestNextStepName(t *testing.T) {
	p := &corev1.Pod{}
	if got := nextStepName(p); got != "step-1" {
		t.Fatalf("first: %q", got)
	}
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{
		{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger"}},
		{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "step-3"}},
	}
	if got := nextStepName(p); got != "step-4" {
		t.Fatalf("after step-3: %q", got)
	}
}

// The file-command files a container step names under
// /github/file_commands are delivered from, and copied back to, the
// runner's _temp/_runner_file_commands; so is the event payload.
func TestContainerStepFiles(t *testing.T) {
	temp := t.TempDir()
	for rel, content := range map[string]string{"_runner_file_commands/set_output_1": "", "_github_workflow/event.json": `{"a":1}`} {
		p := filepath.Join(temp, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var warnings []string
	files, cmds, err := containerStepFiles(map[string]string{
		"GITHUB_OUTPUT": "/github/file_commands/set_output_1",
		"GITHUB_ENV":    "/github/file_commands/set_env_1", // not on disk: delivered empty
		"GITHUB_PATH":   "/github/file_commands/../x",
	}, temp, func(f string, a ...any) { warnings = append(warnings, fmt.Sprintf(f, a...)) })
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range files {
		paths = append(paths, f.Container)
	}
	slices.Sort(paths)
	want := []string{FileCommandsDir + "/set_env_1", FileCommandsDir + "/set_output_1", WorkflowDir + "/event.json"}
	if !reflect.DeepEqual(paths, want) {
		t.Fatalf("delivered %q, want %q", paths, want)
	}
	if len(cmds) != 2 || len(warnings) != 1 || !strings.Contains(warnings[0], "GITHUB_PATH") {
		t.Fatalf("copied back %v, warnings %q", cmds, warnings)
	}
	for _, c := range cmds {
		if filepath.Dir(c.host) != filepath.Join(temp, "_runner_file_commands") {
			t.Fatalf("copied back to %s", c.host)
		}
	}
	job := transfer.DeliveryJob("d", files, stepLinks("r/r"))
	script := string(job.Files[len(job.Files)-1].Content)
	if !strings.Contains(script, "ln -sfn '/__w/r/r' '"+StepWorkspace+"'") {
		t.Fatalf("the delivery script does not link the workspace:\n%s", script)
	}
	if !strings.Contains(script, "chmod a+rw '"+FileCommandsDir+"/set_output_1'") || strings.Contains(script, "chmod a+rw '"+WorkflowDir) {
		t.Fatalf("the delivery script does not share the file-command files only:\n%s", script)
	}
}

// The step's registry credentials are added to the pull Secret's auths.
func TestMergeAuths(t *testing.T) {
	got, err := mergeAuths([]byte(`{"auths":{"a.io":{"auth":"x"}}}`), &hookapi.Registry{Username: "u", Password: "p", ServerURL: "b.io"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), `"a.io":{"auth":"x"}`) || !strings.Contains(string(got), `"b.io":{`) || !strings.Contains(string(got), `"dTpw"`) {
		t.Fatalf("merged %s", got)
	}
}

// The step's own CI wins over the runner's default, as the runner's
// docker containers keep a CI the container's env sets.
func TestBuildContainerStepOwnCIWins(t *testing.T) {
	args := &Container{Image: "x", EnvironmentVariables: map[string]string{"CI": "false"}}
	step, err := buildContainerStep(args, "step-1", "s", testShim, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	if string(step.env["CI"]) != "false" || string(step.env["GITHUB_ACTIONS"]) != "true" {
		t.Fatalf("env %q: want the step's CI=false and GITHUB_ACTIONS=true", step.env)
	}
}
