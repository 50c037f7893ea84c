package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitlabCLI runs `tether gitlab ARGS` with the runner's variables env.
func gitlabCLI(t *testing.T, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "tether"), append([]string{"gitlab"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "SYSTEM_FAILURE_EXIT_CODE=42", "BUILD_FAILURE_EXIT_CODE=41", "CUSTOM_ENV_CI_JOB_ID=5", "CUSTOM_ENV_CI_RUNNER_ID=3"}, env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func TestGitLabConfigPrintsTheDriverJSON(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tether.yaml")
	os.WriteFile(cfg, []byte("builds-dir: /work/builds\nnamespace: ci\n"), 0o600)
	out, errb, code := gitlabCLI(t, dir, []string{"TETHER_CONFIG=" + cfg}, "config")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	var got struct {
		BuildsDir string `json:"builds_dir"`
		Hostname  string `json:"hostname"`
		Shell     string `json:"shell"`
		Shared    *bool  `json:"builds_dir_is_shared"`
		Driver    struct{ Name string }
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.BuildsDir != "/work/builds" || got.Hostname != "tether-gitlab-r3-j5" || got.Shell != "bash" || got.Shared == nil || *got.Shared || got.Driver.Name != "tether" {
		t.Fatalf("%+v", got)
	}
}

// Bad input is a system failure with a message saying what is wrong.
func TestGitLabBadInput(t *testing.T) {
	dir := t.TempDir()
	noImage := filepath.Join(dir, "job.json")
	os.WriteFile(noImage, []byte(`{"id": 5, "image": {"name": ""}}`), 0o600)
	badCfg := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badCfg, []byte("namespaces: ci\n"), 0o600)
	nsOnly := filepath.Join(dir, "ns.yaml")
	os.WriteFile(nsOnly, []byte("namespace: ci\n"), 0o600)
	relShell := filepath.Join(dir, "shell.yaml")
	os.WriteFile(relShell, []byte("shell: bash\n"), 0o600)
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"prepare"}, "JOB_RESPONSE_FILE is not set"},
		{[]string{"JOB_RESPONSE_FILE=" + filepath.Join(dir, "missing.json")}, []string{"prepare"}, "read the job response"},
		{[]string{"JOB_RESPONSE_FILE=" + noImage}, []string{"prepare"}, "names no image (image: in its .gitlab-ci.yml) and the driver config sets no default: set image: in a driver config file (--config FILE or $TETHER_CONFIG), or pass --image"},
		{[]string{"JOB_RESPONSE_FILE=" + noImage}, []string{"prepare", "--config", nsOnly}, "set image: in " + nsOnly + ", or pass --image"},
		{nil, []string{"config", "--config", filepath.Join(dir, "nope.yaml")}, "the driver config: --config: read the config file"},
		{nil, []string{"config", "--config", badCfg}, `unknown key "namespaces" (did you mean "namespace"?)`},
		{nil, []string{"config", "--pull-policy", "Sometimes"}, `pull-policy "Sometimes": want Always, IfNotPresent or Never`},
		{nil, []string{"config", "--builds-dir", "/tether/b"}, `builds-dir "/tether/b" would cover /tether`},
		{nil, []string{"config", "--gitlab-helper-image", ""}, `gitlab-helper-image is empty`},
		{nil, []string{"config", "--ttl-margin", "0s"}, `ttl-margin must be positive`},
		{[]string{"JOB_RESPONSE_FILE=" + noImage}, []string{"run", filepath.Join(dir, "no-script"), "build_script"}, "the stage script"},
		{nil, []string{"run", "only-one-arg"}, "want 2 arguments"},
		{nil, []string{"config", "--config", relShell}, `shell "bash" must be an absolute path`},
		{[]string{"JOB_RESPONSE_FILE=" + noImage}, []string{"prepare", "--image", "alpine", "--memory", "lots"}, `--memory "lots"`},
		{nil, []string{"explode"}, `unknown command "explode"`},
	} {
		out, errb, code := gitlabCLI(t, dir, tc.env, tc.args...)
		if code != 42 || !strings.Contains(out+errb, tc.want) {
			t.Errorf("%v: exit %d, output %q %q; want 42 and %q", tc.args, code, out, errb, tc.want)
		}
	}
}

// Every subcommand's --help prints the usage and the settings, exit 0.
func TestGitLabSubcommandHelp(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"prepare", "--help"}, {"run", "-h"}, {"cleanup", "--help"}, {"config", "--help"}} {
		out, errb, code := gitlabCLI(t, dir, nil, args...)
		if code != 0 || errb != "" || !strings.Contains(out, "Usage: tether gitlab") || !strings.Contains(out, "--gitlab-helper-image") {
			t.Errorf("%v: exit %d stderr %q stdout %q; want 0 and the usage with the flags", args, code, errb, out)
		}
	}
}

// An API server that cannot be reached, or that refuses the credentials,
// fails prepare before anything else with a message naming the server or
// saying what to do about the credentials.
func TestGitLabPrepareAPIServerProblems(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "job.json")
	os.WriteFile(job, []byte(`{"id": 5, "image": {"name": "alpine:3"}}`), 0o600)
	script := filepath.Join(dir, "script")
	os.WriteFile(script, []byte("echo hi\n"), 0o700)
	refusing := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`)
	}))
	defer refusing.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	for _, tc := range []struct{ server, want string }{
		{refusing.URL, "Unauthorized (the API server refused the runner's credentials: the token or certificate of its kubeconfig is wrong or has expired"},
		{closedURL, "cannot reach the Kubernetes API server at " + closedURL + " (the server of the driver's kubeconfig)"},
	} {
		kc := filepath.Join(dir, "kubeconfig")
		os.WriteFile(kc, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: stale}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: ci}}]
current-context: c
`, tc.server)), 0o600)
		out, errb, code := gitlabCLI(t, dir, []string{"JOB_RESPONSE_FILE=" + job}, "prepare", "--kubeconfig", kc, "--gitlab-helper-image", "none")
		if code != 42 || !strings.Contains(out, "ERROR: tether: ") || !strings.Contains(out, tc.want) {
			t.Errorf("server %s: exit %d stdout %q stderr %q; want 42 and %q", tc.server, code, out, errb, tc.want)
		}
		if tc.server != refusing.URL {
			continue
		}
		// A stage too: at once, not after the attach's reconnect timeout.
		out, errb, code = gitlabCLI(t, dir, []string{"JOB_RESPONSE_FILE=" + job}, "run", "--kubeconfig", kc, "--gitlab-helper-image", "none", script, "step_script")
		if code != 42 || !strings.Contains(out, "ERROR: tether: ") || !strings.Contains(out, "get pod ci/tether-gitlab-r3-j5: Unauthorized (the API server refused the runner's credentials") {
			t.Errorf("run: exit %d stdout %q stderr %q; want 42 and the credentials' advice", code, out, errb)
		}
	}
}
