package runnerapi

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestReadJobAndMaskedValues(t *testing.T) {
	p := filepath.Join(t.TempDir(), "job.json")
	os.WriteFile(p, []byte(`{"id": 77, "image": {"name": "alpine:3", "entrypoint": [""]},
	  "services": [{"name": "postgres:16", "alias": "db", "variables": [{"key": "POSTGRES_PASSWORD", "value": "pw"}]}],
	  "variables": [{"key": "TOKEN", "value": "long-enough-secret", "masked": true}, {"key": "SHORT", "value": "abc", "masked": true}, {"key": "PLAIN", "value": "visible-value", "masked": false}],
	  "runner_info": {"timeout": 3600}}`), 0o600)
	j, err := ReadJob(func(k string) string {
		if k == "JOB_RESPONSE_FILE" {
			return p
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if j.ID != 77 || j.Image.Name != "alpine:3" || j.Timeout() != time.Hour || len(j.Services) != 1 || j.Services[0].Alias != "db" || j.Services[0].Variables[0].Value != "pw" {
		t.Fatalf("%+v", j)
	}
	if m := j.MaskedValues(); len(m) != 1 || m[0] != "long-enough-secret" {
		t.Fatalf("masked %v", m)
	}
}

func TestPodNameAndStages(t *testing.T) {
	env := map[string]string{"CUSTOM_ENV_CI_RUNNER_ID": "12", "CUSTOM_ENV_CI_JOB_ID": "3456"}
	name, err := PodName(func(k string) string { return env[k] })
	if err != nil || name != "tether-gitlab-r12-j3456" {
		t.Fatalf("%q %v", name, err)
	}
	if _, err := PodName(func(string) string { return "" }); err == nil {
		t.Fatal("no job ID accepted")
	}
	for _, s := range []string{"get_sources", "build_script", "step_script", "after_script", "step_release", "cleanup_file_variables"} {
		if !KnownStage(s) {
			t.Errorf("%s unknown", s)
		}
	}
	if KnownStage("made_up") || KnownStage("step_") {
		t.Error("an unknown stage is known")
	}
	c := ReadExitCodes(func(k string) string { return map[string]string{"BUILD_FAILURE_EXIT_CODE": "5"}[k] })
	if c.BuildFailure != 5 || c.SystemFailure != 2 {
		t.Fatalf("%+v", c)
	}
}

// Image and service names may use job variables, as in .gitlab-ci.yml.
func TestExpand(t *testing.T) {
	env := map[string]string{"CUSTOM_ENV_CI_REGISTRY": "registry.example.com", "CUSTOM_ENV_TAG": "1.2"}
	getenv := func(k string) string { return env[k] }
	for in, want := range map[string]string{
		"$CI_REGISTRY/app:${TAG}": "registry.example.com/app:1.2",
		"alpine:3":                "alpine:3",
		"x:$UNSET":                "x:",
	} {
		if got := Expand(getenv, in); got != want {
			t.Errorf("Expand(%q) = %q, want %q", in, got, want)
		}
	}
}
