package gitlab

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	gitlab "github.com/tether-ci/tether/integration/gitlab/internal/runnerapi"
	"github.com/tether-ci/tether/protocol"
)

func gitlabTestFlags(t *testing.T, args ...string) *Settings {
	t.Helper()
	var f Settings
	if _, err := Parse(&f, args, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	return &f
}

// The job's pod: the job's image and services, the driver's shaping, the
// builds and cache volumes in both shim containers, GitLab's helper image
// for the runner's version, the job's labels and timeout.
func TestGitLabSpec(t *testing.T) {
	cfg := gitlabTestFlags(t, "--cpu", "500m", "--toleration", "pool=ci:NoSchedule", "--label", "team=x", "--idle-timeout", "5m",
		"--gitlab-helper-memory", "128Mi", "--ttl-margin", "7m", "--service-limits", "cpu=1", "--service-requests", "cpu=100m")
	job := &gitlab.Job{Image: gitlab.Image{Name: "golang:1.26"}, Services: []gitlab.Service{{Name: "postgres:16", Alias: "db",
		Variables: []gitlab.Variable{{Key: "POSTGRES_PASSWORD", Value: "pw"}}}}}
	job.Runner.Timeout = 600
	env := map[string]string{"CUSTOM_ENV_CI_RUNNER_VERSION": "18.1.0", "CUSTOM_ENV_CI_JOB_ID": "5", "CUSTOM_ENV_CI_PROJECT_ID": "42"}
	spec, err := gitlabSpec(cfg, job, "tether-gitlab-r1-j5", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if spec.Image != "golang:1.26" || !spec.Serve || spec.Timeout != 10*time.Minute || spec.IdleTimeout != 5*time.Minute || spec.TTL != 17*time.Minute {
		t.Errorf("spec %+v", spec)
	}
	if spec.Helper == nil || spec.Helper.Image != "registry.gitlab.com/gitlab-org/gitlab-runner/gitlab-runner-helper:x86_64-v18.1.0" {
		t.Errorf("helper %+v: want GitLab's helper image of the runner's version", spec.Helper)
	}
	if spec.Labels["team"] != "x" || spec.Labels["tether.dev/gitlab-project"] != "42" || spec.Labels["tether.dev/gitlab-job"] != "5" {
		t.Errorf("labels %v", spec.Labels)
	}
	if len(spec.Tolerations) != 1 || !spec.Resources.Limits.Cpu().Equal(*spec.Resources.Requests.Cpu()) {
		t.Errorf("shaping: tolerations %v resources %v", spec.Tolerations, spec.Resources)
	}
	if len(spec.Services) != 1 || spec.Services[0].Aliases[0] != "db" || spec.Services[0].Env["POSTGRES_PASSWORD"] != "pw" {
		t.Errorf("services %+v", spec.Services)
	}
	if r := spec.Services[0].Resources; r.Requests.Cpu().String() != "100m" || r.Limits.Cpu().String() != "1" {
		t.Errorf("job service resources %+v, want the config's service-requests/limits", r)
	}
	if r := spec.Helper.Resources; r.Requests.Memory().String() != "128Mi" || r.Limits.Memory().String() != "128Mi" {
		t.Errorf("helper resources %+v, want gitlab-helper-memory as request and limit", r)
	}
	spec.Namespace = "ci"
	objs, err := kube.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []corev1.Container{objs.Pod.Spec.Containers[0], objs.Pod.Spec.InitContainers[1]} {
		for _, dir := range []string{"/builds", "/cache"} {
			if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == dir }) {
				t.Errorf("container %s does not mount %s: %+v", c.Name, dir, c.VolumeMounts)
			}
		}
	}
	if objs.ConfigMap != nil || objs.Secret != nil {
		t.Errorf("a GitLab job pod stores nothing in ConfigMaps or Secrets: %+v %+v", objs.ConfigMap, objs.Secret)
	}
}

func TestGitLabSpecSettings(t *testing.T) {
	job := &gitlab.Job{}
	noEnv := func(string) string { return "" }
	// No runner version: the default helper image cannot be named.
	_, err := gitlabSpec(gitlabTestFlags(t, "--image", "alpine"), job, "p", noEnv)
	if err == nil || !strings.Contains(err.Error(), "the runner passed no CI_RUNNER_VERSION") {
		t.Errorf("no runner version: %v", err)
	}
	// none: no helper container; a cache volume of the admin's wins.
	spec, err := gitlabSpec(gitlabTestFlags(t, "--image", "alpine", "--gitlab-helper-image", "none", "--volume", "pvc:ci-cache:/cache"), job, "p", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Helper != nil || spec.Image != "alpine" {
		t.Errorf("spec %+v", spec)
	}
	var caches int
	for _, m := range spec.VolumeMounts {
		if m.MountPath == "/cache" {
			caches++
		}
	}
	if caches != 1 {
		t.Errorf("mounts %+v: want only the admin's volume at /cache", spec.VolumeMounts)
	}
	if _, err := gitlabSpec(gitlabTestFlags(t, "--gitlab-helper-image", "none"), job, "p", noEnv); err == nil || !strings.Contains(err.Error(), "names no image") {
		t.Errorf("no image: %v", err)
	}
	if _, err := gitlabSpec(gitlabTestFlags(t, "--image", "a", "--gitlab-helper-image", "none", "--node-selector", "nokv"), job, "p", noEnv); err == nil || !strings.Contains(err.Error(), "--node-selector") {
		t.Errorf("bad shaping: %v", err)
	}
	env := func(k string) string { return map[string]string{"CUSTOM_ENV_CI_RUNNER_VERSION": "1.0"}[k] }
	if _, err := gitlabSpec(gitlabTestFlags(t, "--image", "a", "--gitlab-helper-requests", "cpu=2", "--gitlab-helper-limits", "cpu=1"), job, "p", env); err == nil ||
		!strings.Contains(err.Error(), "the cpu request 2 is more than its limit 1 (--gitlab-helper-cpu") {
		t.Errorf("helper request over limit: %v", err)
	}
	if _, err := gitlabSpec(gitlabTestFlags(t, "--image", "a", "--service-memory", "lots"), job, "p", env); err == nil || !strings.Contains(err.Error(), `--service-memory "lots" is not a quantity`) {
		t.Errorf("bad service memory: %v", err)
	}
}

// The after_script stage's job carries its own timeout, as the runner
// gives after_script one (RUNNER_AFTER_SCRIPT_TIMEOUT, default 5m), for
// the shim to enforce in band; no other stage has one. A value the runner
// ignores is reported for the job log.
func TestGitLabStageJobTimeout(t *testing.T) {
	cfg := gitlabTestFlags(t, "--shell", "/bin/sh")
	job := &gitlab.Job{Variables: []gitlab.Variable{{Key: "TOKEN", Value: "masked-value-1", Masked: true}}}
	for _, tc := range []struct {
		stage, value string
		want         time.Duration
		warning      string
	}{
		{"after_script", "", 5 * time.Minute, ""},
		{"after_script", "90s", 90 * time.Second, ""},
		{"after_script", "later", 5 * time.Minute, `ignoring RUNNER_AFTER_SCRIPT_TIMEOUT "later"`},
		{"build_script", "90s", 0, ""},
		{"step_script", "", 0, ""},
		{"get_sources", "90s", 0, ""},
	} {
		env := map[string]string{"CUSTOM_ENV_RUNNER_AFTER_SCRIPT_TIMEOUT": tc.value}
		j, warning := gitlabStageJob(tc.stage, []byte("echo hi\n"), job, cfg, func(k string) string { return env[k] })
		if j.Timeout != tc.want || (tc.warning == "") != (warning == "") || !strings.Contains(warning, tc.warning) {
			t.Errorf("%s with %q: timeout %s, warning %q; want %s, %q", tc.stage, tc.value, j.Timeout, warning, tc.want, tc.warning)
		}
		if target := "/tether/files/" + tc.stage; len(j.Scripts) != 1 || j.Scripts[0] != target || len(j.Files) != 1 || j.Files[0].Path != target ||
			j.Shell != "/bin/sh" || !slices.Equal(j.Mask, []string{"masked-value-1"}) || len(j.After) != 0 {
			t.Errorf("%s: job %+v", tc.stage, j)
		}
	}
	// The shim stopped the stage at its timeout: a build failure saying so.
	res := client.Result{ExitCode: 143, FailedScript: "/tether/files/after_script", Statuses: []protocol.Status{
		{Script: "/tether/files/after_script", CommandExitCode: 143, Error: protocol.JobTimeoutReason + " (1m30s)"}}}
	got := stageOutcome(res, nil, 10*time.Minute, 90*time.Second, "after_script")
	want := stageResult{code: 143, note: "the after_script timeout (1m30s, RUNNER_AFTER_SCRIPT_TIMEOUT) passed: stage after_script was stopped"}
	if got != want {
		t.Errorf("after_script stopped at its timeout: %+v, want %+v", got, want)
	}
}

func TestGitLabStagesInHelper(t *testing.T) {
	for stage, want := range map[string]bool{"get_sources": true, "restore_cache": true, "upload_artifacts_on_failure": true,
		"build_script": false, "step_script": false, "after_script": false, "prepare_script": false, "cleanup_file_variables": false, "step_x": false} {
		if gitlab.InHelper(stage) != want {
			t.Errorf("InHelper(%s) = %v", stage, !want)
		}
	}
}

// A stage's result in the runner's terms: success, build failures with the
// script's code (and a note for a timeout or an OOM kill), system failures.
func TestGitLabStageOutcome(t *testing.T) {
	lost := errors.New("attach: connection refused")
	oom := fmt.Errorf("session: %w", &kube.ContainerEndedError{Container: "build", ExitCode: 137, Reason: kube.ReasonOOMKilled, MemoryLimit: 64 << 20})
	for _, tc := range []struct {
		name string
		res  client.Result
		err  error
		want stageResult
	}{
		{"success", client.Result{}, nil, stageResult{}},
		{"script failed", client.Result{ExitCode: 3}, nil, stageResult{code: 3}},
		{"cancelled", client.Result{ExitCode: 143, Cancelled: true}, lost, stageResult{code: 143}},
		// The cancel's status error is no note: run says the cancel itself.
		{"cancelled script", client.Result{ExitCode: 143, Cancelled: true, Statuses: []protocol.Status{{CommandExitCode: 143, Error: "cancelled by the client"}}},
			errors.New("job cancelled: received SIGTERM"), stageResult{code: 143}},
		{"deadline", client.Result{ExitCode: 124, Exit: &protocol.Exit{Reason: protocol.ReasonDeadline}}, lost,
			stageResult{code: 124, note: "the job's timeout (1m0s) passed: stage build_script was stopped"}},
		{"script OOM", client.Result{ExitCode: 137, Statuses: []protocol.Status{{OOMKilled: true, MemoryLimit: 64 << 20}}}, nil,
			stageResult{code: 137, note: "stage build_script was killed: out of memory (limit 64Mi)"}},
		{"container OOM", client.Result{}, oom, stageResult{code: 137, note: "the build container was killed while stage build_script ran: out of memory (limit 64Mi)"}},
		{"script could not run", client.Result{ExitCode: 127, Statuses: []protocol.Status{{CommandExitCode: 127, Error: "the job's shell /bin/bash does not exist in the container"}}}, nil,
			stageResult{code: 127, note: "stage build_script: the job's shell /bin/bash does not exist in the container"}},
		{"lost", client.Result{}, lost, stageResult{system: true}},
		{"container ended otherwise", client.Result{}, &kube.ContainerEndedError{Reason: "Error"}, stageResult{system: true}},
		{"container crashed after a script's OOM kill", client.Result{Statuses: []protocol.Status{{OOMKilled: true, MemoryLimit: 64 << 20}}},
			&kube.ContainerEndedError{Container: "build", ExitCode: 2, Reason: kube.ReasonOOMKilled}, stageResult{system: true}},
	} {
		if got := stageOutcome(tc.res, tc.err, time.Minute, 0, "build_script"); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// The job's image and its services' names and aliases may use job
// variables; the pod gets them expanded, as GitLab's own executors do.
func TestGitLabSpecExpandsVariables(t *testing.T) {
	cfg := gitlabTestFlags(t, "--gitlab-helper-image", "none")
	job := &gitlab.Job{Image: gitlab.Image{Name: "$CI_REGISTRY_IMAGE/build:${TAG}"},
		Services: []gitlab.Service{{Name: "${CI_DEPENDENCY_PROXY_GROUP_IMAGE_PREFIX}/postgres:16", Alias: "db-$TAG"}}}
	env := map[string]string{"CUSTOM_ENV_CI_REGISTRY_IMAGE": "registry.example.com/g/p", "CUSTOM_ENV_TAG": "7",
		"CUSTOM_ENV_CI_DEPENDENCY_PROXY_GROUP_IMAGE_PREFIX": "gitlab.example.com:443/g/dependency_proxy/containers"}
	spec, err := gitlabSpec(cfg, job, "tether-gitlab-r1-j5", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if spec.Image != "registry.example.com/g/p/build:7" {
		t.Errorf("image %q", spec.Image)
	}
	if len(spec.Services) != 1 || spec.Services[0].Image != "gitlab.example.com:443/g/dependency_proxy/containers/postgres:16" ||
		len(spec.Services[0].Aliases) != 1 || spec.Services[0].Aliases[0] != "db-7" {
		t.Errorf("services %+v", spec.Services)
	}
}

// Without a shell setting, the stage script's #! line (the runner's
// #!/usr/bin/env bash) is blanked, line numbers kept, so the shim runs it
// with bash where the container has it, else sh; a configured shell gets
// the script unchanged.
func TestGitLabStageJobShell(t *testing.T) {
	script := []byte("#!/usr/bin/env bash\n\nset -eo pipefail\necho hi\n")
	job := &gitlab.Job{}
	j, _ := gitlabStageJob("step_script", script, job, gitlabTestFlags(t), func(string) string { return "" })
	if j.Shell != "" || string(j.Files[0].Content) != "\n\nset -eo pipefail\necho hi\n" {
		t.Errorf("default shell: shell %q, script %q", j.Shell, j.Files[0].Content)
	}
	j, _ = gitlabStageJob("step_script", script, job, gitlabTestFlags(t, "--shell", "/bin/bash"), func(string) string { return "" })
	if j.Shell != "/bin/bash" || string(j.Files[0].Content) != string(script) {
		t.Errorf("--shell /bin/bash: shell %q, script %q", j.Shell, j.Files[0].Content)
	}
	for in, want := range map[string]string{"echo hi\n": "echo hi\n", "#!/bin/sh": "", "": ""} {
		if got := string(withoutInterpreter([]byte(in))); got != want {
			t.Errorf("withoutInterpreter(%q) = %q, want %q", in, got, want)
		}
	}
}

// image:pull_policy of the job's image and of each service reaches their
// containers when the driver config allows it, the rest of the pod keeps
// pull-policy, and a policy the config does not allow fails prepare naming
// the setting; a bad allowed-pull-policies value is refused.
func TestGitLabSpecJobPullPolicy(t *testing.T) {
	job := &gitlab.Job{Image: gitlab.Image{Name: "golang:1.26", PullPolicies: []string{"always", "if-not-present"}},
		Services: []gitlab.Service{{Name: "postgres:16", PullPolicies: []string{"never"}}, {Name: "redis:7"}}}
	noEnv := func(k string) string {
		if k == "CUSTOM_ENV_CI_RUNNER_VERSION" {
			return "18.1.0"
		}
		return ""
	}
	cfg := gitlabTestFlags(t, "--pull-policy", "Always", "--allowed-pull-policies", "if-not-present,never")
	spec, err := gitlabSpec(cfg, job, "p", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	spec.Namespace = "ci" // prepare fills it in
	objs, err := kube.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	policies := map[string]corev1.PullPolicy{}
	for _, c := range append(objs.Pod.Spec.InitContainers, objs.Pod.Spec.Containers...) {
		policies[c.Image] = c.ImagePullPolicy
	}
	want := map[string]corev1.PullPolicy{"golang:1.26": corev1.PullIfNotPresent, "postgres:16": corev1.PullNever, "redis:7": corev1.PullAlways}
	for image, p := range want {
		if policies[image] != p {
			t.Errorf("container of %s pulls %q, want %q (all: %v)", image, policies[image], p, policies)
		}
	}
	if p := policies[spec.HelperImage]; p != corev1.PullAlways {
		t.Errorf("the shim's image pulls %q, want the config's Always", p)
	}

	// pull-policy alone is what a job may choose when allowed-pull-policies
	// is unset: the image's if-not-present is, the service's never is not.
	_, err = gitlabSpec(gitlabTestFlags(t, "--pull-policy", "IfNotPresent"), job, "p", noEnv)
	if err == nil || !strings.Contains(err.Error(), "service postgres:16: pull_policy never") || !strings.Contains(err.Error(), "allowed-pull-policies (IfNotPresent)") {
		t.Errorf("a service's policy outside pull-policy: %v", err)
	}
	_, err = gitlabSpec(gitlabTestFlags(t), job, "p", noEnv)
	if err == nil || !strings.Contains(err.Error(), "the job's image: pull_policy always, if-not-present") || !strings.Contains(err.Error(), "set allowed-pull-policies") {
		t.Errorf("a job's policy with none allowed: %v", err)
	}
	var f Settings
	if _, err := Parse(&f, []string{"--allowed-pull-policies", "always,sometimes"}, noEnv); err == nil || !strings.Contains(err.Error(), `allowed-pull-policies: pull policy "sometimes"`) {
		t.Errorf("a bad allowed-pull-policies value: %v", err)
	}
}
