package runnerapi

import "github.com/tether-ci/tether/internal/gitlabpod"

// RunnerCommand is the command the runner's generated stage scripts call
// to extract and archive caches and to download and upload artifacts
// (`gitlab-runner cache-extractor …`, `gitlab-runner artifacts-uploader
// …`): the Custom executor registers its runner command under this name,
// and each call is guarded by `if gitlab-runner --version …; else echo
// "Missing gitlab-runner. … is disabled."; fi`, a warning, not a failure.
const RunnerCommand = gitlabpod.RunnerCommand

// RunnerHelperCommand is the runner's helper binary in GitLab's helper
// image (DefaultHelperImage), which has no RunnerCommand: the driver's
// shims offer it to the stage scripts as RunnerCommand.
const RunnerHelperCommand = gitlabpod.RunnerHelperCommand

// Cache is one of the job's caches (cache: in .gitlab-ci.yml), as far as
// the driver reads it.
type Cache struct {
	Key       string   `json:"key"`
	Untracked bool     `json:"untracked"`
	Paths     []string `json:"paths"`
}

// Artifact is one of the job's artifacts (artifacts: and its reports), as
// far as the driver reads it.
type Artifact struct {
	Name      string   `json:"name"`
	Untracked bool     `json:"untracked"`
	Paths     []string `json:"paths"`
	Exclude   []string `json:"exclude"`
}

// Dependency is an earlier job whose artifacts this job downloads.
type Dependency struct {
	ID            int64  `json:"id"`
	Name          string `json:"name"`
	ArtifactsFile struct {
		Filename string `json:"filename"`
	} `json:"artifacts_file"`
}

// CachesAndArtifacts says which of caches and artifacts the runner's stage
// scripts for the job handle with RunnerCommand ("" for neither): as the
// runner writes them, a cache with paths or untracked files (extracted and
// archived), an artifact with paths, exclusions or untracked files
// (uploaded), a dependency with an artifacts file (downloaded).
func (j *Job) CachesAndArtifacts() string {
	var caches, artifacts bool
	for _, c := range j.Cache {
		caches = caches || len(c.Paths) > 0 || c.Untracked
	}
	for _, a := range j.Artifacts {
		artifacts = artifacts || len(a.Paths)+len(a.Exclude) > 0 || a.Untracked
	}
	for _, d := range j.Dependencies {
		artifacts = artifacts || d.ArtifactsFile.Filename != ""
	}
	switch {
	case caches && artifacts:
		return "caches and artifacts"
	case caches:
		return "caches"
	case artifacts:
		return "artifacts"
	}
	return ""
}
