package actions

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/actions/hookapi"
)

// planStep delivers what the runner wrote into its own _temp (the script
// its arguments name, the file-command files, the event payload) and maps
// the file-command files back to the runner's paths.
func TestPlanStep(t *testing.T) {
	temp := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(temp, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("abc.sh", "echo hi\n")
	write("_runner_file_commands/set_env_1", "")
	write("_github_workflow/event.json", `{"ref":"main"}`)
	var warnings []string
	args := &hookapi.ScriptStepArgs{
		EntryPoint:     "bash",
		EntryPointArgs: []string{"--noprofile", "-e", "/__w/_temp/abc.sh"},
		EnvironmentVariables: map[string]string{
			"GITHUB_ENV":    "/__w/_temp/_runner_file_commands/set_env_1",
			"GITHUB_OUTPUT": "/__w/_temp/_runner_file_commands/set_output_1", // not on disk: delivered empty
			"GITHUB_PATH":   "/elsewhere/add_path_1",
			"A":             "it's",
			"bad-name":      "x",
			`BAD"NAME`:      "y",
		},
		PrependPath:      hookapi.PathList{"/opt/b", "/opt/a"},
		WorkingDirectory: "/__w/my repo/my repo",
	}
	plan, err := planStep(args, temp, nil, func(f string, a ...any) { warnings = append(warnings, fmt.Sprintf(f, a...)) })
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.job.Files) != 5 || plan.job.Scripts[0] != kube.FilesDir+"/step.sh" {
		t.Fatalf("files %d, scripts %q", len(plan.job.Files), plan.job.Scripts)
	}
	if string(plan.job.Files[0].Content) != "echo hi\n" || string(plan.job.Files[3].Content) != `{"ref":"main"}` {
		t.Errorf("delivered %q and %q", plan.job.Files[0].Content, plan.job.Files[3].Content)
	}
	wantFC := []fileCommand{
		{"/__w/_temp/_runner_file_commands/set_env_1", filepath.Join(temp, "_runner_file_commands", "set_env_1")},
		{"/__w/_temp/_runner_file_commands/set_output_1", filepath.Join(temp, "_runner_file_commands", "set_output_1")},
	}
	if fmt.Sprint(plan.fileCommands) != fmt.Sprint(wantFC) {
		t.Errorf("file commands %v, want %v", plan.fileCommands, wantFC)
	}
	wrapper := string(plan.job.Files[4].Content)
	for _, want := range []string{
		"cp /tether/files/in-0 '/__w/_temp/abc.sh'",
		"cd '/__w/my repo/my repo' ||",
		`export A='it'\''s'`,
		`export PATH='/opt/b:/opt/a':"$PATH"`,
		"exec env 'bad-name=x' 'bash' '--noprofile' '-e' '/__w/_temp/abc.sh'\n",
		"'/github/workflow/event.json'",
	} {
		if !strings.Contains(wrapper, want) {
			t.Errorf("wrapper lacks %q:\n%s", want, wrapper)
		}
	}
	if len(warnings) != 2 || !strings.Contains(warnings[1], `"BAD\"NAME"`) {
		t.Errorf("warnings %q, want two (GITHUB_PATH elsewhere, BAD\"NAME left out; bad-name is set by env)", warnings)
	}
}

func TestPortsAndAliases(t *testing.T) {
	got := ports([]string{"8080:80/tcp", "6379", "127.0.0.1:5432:5432", "53/udp", "nonsense"})
	want := map[string]string{"80": "80", "6379": "6379", "5432": "5432", "53": "53"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ports %v, want %v", got, want)
	}
	for image, want := range map[string]string{
		"redis:7": "redis", "ghcr.io/org/Postgres:16@sha256:ab": "postgres", "localhost:5000/x/my_db": "", "busybox": "busybox",
	} {
		if got := imageAlias(image); got != want {
			t.Errorf("imageAlias(%q) = %q, want %q", image, got, want)
		}
	}
}

// hookapi.Registry credentials become one .dockerconfigjson, Docker Hub for a
// registry without a server URL; none at all is nil.
func TestDockerConfig(t *testing.T) {
	args := &PrepareJobArgs{
		Container: &Container{Registry: &hookapi.Registry{Username: "u", Password: "p", ServerURL: "ghcr.io"}},
		Services:  []Container{{Registry: &hookapi.Registry{Username: "a", Password: "b"}}, {}},
	}
	b, err := dockerConfig(args)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"auths":{"ghcr.io":{"auth":"dTpw","password":"p","username":"u"},"https://index.docker.io/v1/":{"auth":"YTpi","password":"b","username":"a"}}}`
	if string(b) != want {
		t.Errorf("got %s\nwant %s", b, want)
	}
	if b, err := dockerConfig(&PrepareJobArgs{Container: &Container{}}); b != nil || err != nil {
		t.Errorf("no credentials: %s, %v", b, err)
	}
}

// TETHER_ACTIONS_CONFIG carries the pod settings tether run and tether
// gitlab take; the hook's own variables win where both say something.
func TestSettingsConfigFile(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "pod.yaml")
	body := "memory: 256Mi\ntoleration: [gpu:NoSchedule]\nlabel: {team: ci}\nnode-selector: {pool: ci}\nservice-account: from-file\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{EnvConfig: cfg, EnvServiceAccount: "from-env", EnvNodeSelector: "zone=a"}
	s, err := SettingsFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	args := &PrepareJobArgs{Container: &Container{Image: "busybox"}}
	spec, err := jobSpec(s, args, "ns", "runner-0")
	if err != nil {
		t.Fatal(err)
	}
	if got := spec.Resources.Limits.Memory().String(); got != "256Mi" {
		t.Errorf("memory limit %s", got)
	}
	if len(spec.Tolerations) != 1 || spec.Labels["team"] != "ci" || spec.Labels[LabelRunnerPod] != "runner-0" ||
		spec.NodeSelector["pool"] != "ci" || spec.NodeSelector["zone"] != "a" || spec.ServiceAccountName != "from-env" {
		t.Errorf("spec: tolerations %v, labels %v, node selector %v, service account %q", spec.Tolerations, spec.Labels, spec.NodeSelector, spec.ServiceAccountName)
	}
	env[EnvConfig] = filepath.Join(t.TempDir(), "missing.yaml")
	if _, err := SettingsFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), EnvConfig) {
		t.Errorf("a missing config file: %v", err)
	}
	if err := os.WriteFile(cfg, []byte("memroy: 1Gi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env[EnvConfig] = cfg
	if _, err := SettingsFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "memroy") {
		t.Errorf("an unknown key: %v", err)
	}
}
