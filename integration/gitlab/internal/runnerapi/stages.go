package runnerapi

import (
	"strconv"
)

// Stages the runner passes to run_exec, in the order it runs them.
var Stages = []string{
	"prepare_script", "get_sources", "restore_cache", "download_artifacts",
	"step_script", "build_script", "after_script",
	"archive_cache", "archive_cache_on_failure",
	"upload_artifacts_on_success", "upload_artifacts_on_failure",
	"cleanup_file_variables",
}

// KnownStage reports whether stage is one the runner is known to run
// (user steps of the form step_NAME included).
func KnownStage(stage string) bool {
	for _, s := range Stages {
		if s == stage {
			return true
		}
	}
	return len(stage) > len("step_") && stage[:len("step_")] == "step_"
}

// ExitCodes are the runner's exit-code contract for run_exec.
type ExitCodes struct {
	// BuildFailure is BUILD_FAILURE_EXIT_CODE: the job's script failed.
	BuildFailure int
	// SystemFailure is SYSTEM_FAILURE_EXIT_CODE: the infrastructure failed.
	SystemFailure int
	// BuildExitCodeFile is BUILD_EXIT_CODE_FILE ("" with older runners):
	// the script's own exit code goes there before a build failure.
	BuildExitCodeFile string
}

// ReadExitCodes reads the contract from the runner's environment, with the
// runner's documented defaults (1 and 2) when a variable is missing.
func ReadExitCodes(getenv func(string) string) ExitCodes {
	code := func(name string, def int) int {
		if n, err := strconv.Atoi(getenv(name)); err == nil {
			return n
		}
		return def
	}
	return ExitCodes{
		BuildFailure:      code("BUILD_FAILURE_EXIT_CODE", 1),
		SystemFailure:     code("SYSTEM_FAILURE_EXIT_CODE", 2),
		BuildExitCodeFile: getenv("BUILD_EXIT_CODE_FILE"),
	}
}

// DefaultHelperImage is GitLab's own helper image for the runner's version
// (x86_64): it has git and gitlab-runner-helper, which the stages in
// HelperStages need. ${CI_RUNNER_VERSION} is the job variable the runner
// sets.
const DefaultHelperImage = "registry.gitlab.com/gitlab-org/gitlab-runner/gitlab-runner-helper:x86_64-v${CI_RUNNER_VERSION}"

// HelperStages run in the helper container, where git and
// gitlab-runner-helper are: fetching the sources, the caches and the
// artifacts. Every other stage runs in the build container.
var HelperStages = []string{
	"get_sources", "restore_cache", "download_artifacts",
	"archive_cache", "archive_cache_on_failure",
	"upload_artifacts_on_success", "upload_artifacts_on_failure",
}

// InHelper reports whether stage runs in the helper container.
func InHelper(stage string) bool {
	for _, s := range HelperStages {
		if s == stage {
			return true
		}
	}
	return false
}
