package actions

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/tether-ci/tether/internal/actionspod"
)

// Paths inside the job container, as the runner translates them
// (actions/runner ContainerOperationProvider.cs).
const (
	// WorkDir is the runner's _work directory in the container.
	WorkDir = actionspod.WorkDir
	// TempDir is the runner's _work/_temp in the container.
	TempDir = "/__w/_temp"
	// FileCommandsDir holds the file-command files (GITHUB_ENV, ...).
	FileCommandsDir = "/__w/_temp/_runner_file_commands"
	// GitHubDir holds HomeDir and WorkflowDir.
	GitHubDir = actionspod.GitHubDir
	// HomeDir is the job container's HOME.
	HomeDir = "/github/home"
	// WorkflowDir holds the event payload (event.json).
	WorkflowDir = "/github/workflow"
)

// Names of the job pod's own volumes (emptyDirs).
const (
	workVolume   = actionspod.WorkVolume
	githubVolume = actionspod.GitHubVolume
)

// LabelRunnerPod is set on a job pod to the runner pod's name
// (ACTIONS_RUNNER_POD_NAME), so cleanup_job finds the pods of a prepare
// that failed before it returned state.
const LabelRunnerPod = "tether.dev/actions-runner-pod"

// runnerContainerEnv are the variables the runner gives every container
// it starts (job container, services, container steps) before the
// container's own, which win: GITHUB_ACTIONS=true and CI=true (actions/runner
// DockerCommandManager.cs, DockerCreate).
func runnerContainerEnv() map[string]string { return actionspod.ContainerEnv() }

// fileCommandVars are the step variables naming file-command files.
var fileCommandVars = []string{"GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_PATH", "GITHUB_STATE", "GITHUB_STEP_SUMMARY"}

// hostTempPath maps a container path under TempDir to the runner-host
// path under runnerTemp (RUNNER_TEMP); ok is false for any other path.
func hostTempPath(runnerTemp, p string) (string, bool) {
	rel, ok := strings.CutPrefix(p, TempDir+"/")
	if !ok || rel == "" || path.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return filepath.Join(runnerTemp, filepath.FromSlash(rel)), true
}

// hostWorkflowEvent is the runner-host path of the event payload.
func hostWorkflowEvent(runnerTemp string) string {
	return filepath.Join(runnerTemp, "_github_workflow", "event.json")
}

// checkWorkingDirectory refuses a working directory that is not an
// absolute container path.
func checkWorkingDirectory(wd string) error {
	if wd != "" && !path.IsAbs(wd) {
		return fmt.Errorf("workingDirectory %q is not an absolute path in the container", wd)
	}
	return nil
}
