// Package runnerapi is the GitLab Runner Custom executor contract as Tether's
// driver (`tether gitlab`) uses it: the job response the runner writes to
// JOB_RESPONSE_FILE, the variables it passes as CUSTOM_ENV_*, the stages it
// runs, and the exit codes it reads back.
package runnerapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// Job is the part of the runner's job response the driver uses.
type Job struct {
	ID        int64      `json:"id"`
	Image     Image      `json:"image"`
	Services  []Service  `json:"services"`
	Variables []Variable `json:"variables"`
	// Cache, Artifacts and Dependencies are what the runner's stage
	// scripts save and restore with RunnerCommand (CachesAndArtifacts).
	Cache        []Cache      `json:"cache"`
	Artifacts    []Artifact   `json:"artifacts"`
	Dependencies []Dependency `json:"dependencies"`
	Runner       struct {
		// Timeout is the job's timeout in seconds.
		Timeout int64 `json:"timeout"`
	} `json:"runner_info"`
}

// Image is a job's image: a name and an optional entrypoint.
type Image struct {
	Name       string     `json:"name"`
	Alias      string     `json:"alias"`
	Entrypoint []string   `json:"entrypoint"`
	Command    []string   `json:"command"`
	Variables  []Variable `json:"variables"`
	// PullPolicies is image:pull_policy from .gitlab-ci.yml (always,
	// if-not-present, never), in order of preference; see JobPullPolicy.
	PullPolicies []string `json:"pull_policy"`
}

// Service is one of the job's services (an Image with an alias).
type Service = Image

// Variable is one job variable.
type Variable struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Masked bool   `json:"masked"`
}

// ReadJob reads the job response from the file JOB_RESPONSE_FILE names.
func ReadJob(getenv func(string) string) (*Job, error) {
	path := getenv("JOB_RESPONSE_FILE")
	if path == "" {
		return nil, errors.New("JOB_RESPONSE_FILE is not set: tether gitlab must be run by GitLab Runner's Custom executor (which sets it), not by hand")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the job response JOB_RESPONSE_FILE=%s: %w", path, err)
	}
	var j Job
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("the job response %s is not the runner's JSON: %w", path, err)
	}
	return &j, nil
}

// Timeout is the job's timeout (0 = none given).
func (j *Job) Timeout() time.Duration { return time.Duration(j.Runner.Timeout) * time.Second }

// MaskedValues returns the values of the job's masked variables that are
// long enough to mask (GitLab itself requires at least 8 characters).
func (j *Job) MaskedValues() []string {
	var out []string
	for _, v := range j.Variables {
		if v.Masked && len(v.Value) >= 8 {
			out = append(out, v.Value)
		}
	}
	return out
}

// Env returns a CUSTOM_ENV_ variable the runner passes to the driver.
func Env(getenv func(string) string, name string) string { return getenv("CUSTOM_ENV_" + name) }

// PodName is the job's pod name, derived from the runner and job IDs, so
// every driver process of the job finds the same pod.
func PodName(getenv func(string) string) (string, error) {
	runner, job := Env(getenv, "CI_RUNNER_ID"), Env(getenv, "CI_JOB_ID")
	if job == "" {
		return "", errors.New("CUSTOM_ENV_CI_JOB_ID is not set: tether gitlab must be run by GitLab Runner's Custom executor")
	}
	if runner == "" {
		runner = "0"
	}
	name := "tether-gitlab-r" + sanitize(runner) + "-j" + sanitize(job)
	if len(name) > 63 {
		name = name[:63]
	}
	return strings.TrimRight(name, "-"), nil
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}

// Expand replaces $NAME and ${NAME} in s with the job variable NAME (its
// CUSTOM_ENV_ variable; empty when unset), as GitLab Runner expands the
// job's image and service names and aliases for its own executors (the
// job response carries them as written in .gitlab-ci.yml).
func Expand(getenv func(string) string, s string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	return os.Expand(s, func(name string) string { return Env(getenv, name) })
}
