package gitlab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// apiServer is a stand-in API server: answer answers every request, and
// the requests are kept in the order they came.
type apiServer struct {
	mu       sync.Mutex
	requests []string
	srv      *httptest.Server
}

// newAPIServer starts an apiServer and writes a kubeconfig for it
// (namespace ci) into dir; it returns the server and the kubeconfig.
func newAPIServer(t *testing.T, dir string, answer func(w http.ResponseWriter, r *http.Request)) (*apiServer, string) {
	t.Helper()
	s := &apiServer{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Method+" "+r.URL.Path)
		s.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(s.srv.Close)
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: ci}}]
current-context: c
`, s.srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	return s, kc
}

// seen returns the requests so far.
func (s *apiServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// status answers with a Kubernetes Status of code and reason.
func status(w http.ResponseWriter, code int, reason, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":%q,"reason":%q,"code":%d}`, message, reason, code)
}

// runnerEnv is the runner's environment of job 5 of runner 3, with the
// job response job (a JSON document written to dir) and extra variables.
func runnerEnv(t *testing.T, dir, job string, extra ...string) Env {
	t.Helper()
	vars := map[string]string{
		"SYSTEM_FAILURE_EXIT_CODE": "42", "BUILD_FAILURE_EXIT_CODE": "41",
		"CUSTOM_ENV_CI_RUNNER_ID": "3", "CUSTOM_ENV_CI_JOB_ID": "5",
	}
	if job != "" {
		path := filepath.Join(dir, "job.json")
		if err := os.WriteFile(path, []byte(job), 0o600); err != nil {
			t.Fatal(err)
		}
		vars["JOB_RESPONSE_FILE"] = path
	}
	for _, kv := range extra {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	return func(name string) string { return vars[name] }
}

// parsed returns the settings of args, failing the test on an error.
func parsed(t *testing.T, env Env, args ...string) *Settings {
	t.Helper()
	var cfg Settings
	if _, err := Parse(&cfg, args, env); err != nil {
		t.Fatal(err)
	}
	return &cfg
}

// Config prints the JSON the runner reads: the settings' directories, the
// job's pod name as hostname, the driver's name.
func TestGitLabConfigJSON(t *testing.T) {
	dir := t.TempDir()
	env := runnerEnv(t, dir, "")
	var out, errb bytes.Buffer
	if code := Config(parsed(t, env, "--builds-dir", "/work/b", "--cache-dir", "/work/c"), env, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	for k, want := range map[string]any{"builds_dir": "/work/b", "cache_dir": "/work/c", "builds_dir_is_shared": false, "hostname": "tether-gitlab-r3-j5", "shell": "bash"} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v (all: %s)", k, got[k], want, out.String())
		}
	}
	if d, _ := got["driver"].(map[string]any); d["name"] != "tether" || d["version"] == "" {
		t.Errorf("driver = %v", got["driver"])
	}
	// Without the job's ID (not run by the runner) the hostname is empty.
	out.Reset()
	noJob := func(name string) string {
		if name == "CUSTOM_ENV_CI_JOB_ID" {
			return ""
		}
		return env(name)
	}
	if code := Config(parsed(t, noJob), noJob, &out, &errb); code != 0 || !strings.Contains(out.String(), `"hostname":""`) {
		t.Errorf("without CI_JOB_ID: exit %d %s", code, out.String())
	}
}

// Settings or a job that cannot make a pod fail prepare, as a system
// failure naming what to change, before any request reaches the cluster.
func TestGitLabPrepareFailsBeforeTheCluster(t *testing.T) {
	dir := t.TempDir()
	api, kc := newAPIServer(t, dir, func(w http.ResponseWriter, r *http.Request) {
		status(w, http.StatusInternalServerError, "InternalError", "no request was expected")
	})
	for _, tc := range []struct {
		name, job string
		args      []string
		want      string
	}{
		{"no image", `{"id": 5}`, []string{"--gitlab-helper-image", "none"},
			"ERROR: tether: the job names no image (image: in its .gitlab-ci.yml) and the driver config sets no default: set image: in a driver config file (--config FILE or $TETHER_CONFIG), or pass --image\n"},
		{"bad cpu", `{"id": 5, "image": {"name": "alpine:3"}}`, []string{"--cpu", "lots", "--gitlab-helper-image", "none"},
			"ERROR: tether: the driver config: --cpu"},
		{"helper image without the runner's version", `{"id": 5, "image": {"name": "alpine:3"}}`, nil,
			"ERROR: tether: gitlab-helper-image \"registry.gitlab.com/gitlab-org/gitlab-runner/gitlab-runner-helper:x86_64-v${CI_RUNNER_VERSION}\": the runner passed no CI_RUNNER_VERSION"},
		{"pull policy not allowed", `{"id": 5, "image": {"name": "alpine:3", "pull_policy": ["always"]}}`, []string{"--gitlab-helper-image", "none"},
			"ERROR: tether: the job's image: pull_policy always in .gitlab-ci.yml, but the driver config allows no pull policy for jobs to choose"},
		{"service without a name", `{"id": 5, "image": {"name": "alpine:3"}, "services": [{"alias": "db"}]}`, []string{"--gitlab-helper-image", "none"},
			"ERROR: tether: service 0 of the job has no name (image)\n"},
		{"no job response", "", []string{"--image", "alpine:3"},
			"ERROR: tether: JOB_RESPONSE_FILE is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := runnerEnv(t, t.TempDir(), tc.job)
			var out bytes.Buffer
			code := Prepare(context.Background(), parsed(t, env, append([]string{"--kubeconfig", kc}, tc.args...)...), env, &out)
			if code != 42 || !strings.HasPrefix(out.String(), tc.want) {
				t.Errorf("exit %d, job log %q; want 42 and %q", code, out.String(), tc.want)
			}
		})
	}
	if got := api.seen(); len(got) != 0 {
		t.Errorf("prepare with bad settings asked the API server: %q", got)
	}
}

// Cleanup of a pod that is gone (never created, or deleted before) is a
// success and deletes nothing; a refused request is a system failure
// with what to do.
func TestGitLabCleanupOfAMissingPod(t *testing.T) {
	dir := t.TempDir()
	env := runnerEnv(t, dir, "")
	api, kc := newAPIServer(t, dir, func(w http.ResponseWriter, r *http.Request) {
		status(w, http.StatusNotFound, "NotFound", `pods "tether-gitlab-r3-j5" not found`)
	})
	var errb bytes.Buffer
	if code := Cleanup(context.Background(), parsed(t, env, "--kubeconfig", kc), env, &errb); code != 0 || errb.Len() != 0 {
		t.Fatalf("exit %d stderr %q; want 0 and nothing said", code, errb.String())
	}
	if got := api.seen(); len(got) != 1 || got[0] != "GET /api/v1/namespaces/ci/pods/tether-gitlab-r3-j5" {
		t.Errorf("requests %q; want the pod's GET alone", got)
	}

	_, refusing := newAPIServer(t, t.TempDir(), func(w http.ResponseWriter, r *http.Request) {
		status(w, http.StatusForbidden, "Forbidden", `pods "tether-gitlab-r3-j5" is forbidden`)
	})
	code := Cleanup(context.Background(), parsed(t, env, "--kubeconfig", refusing), env, &errb)
	if code != 42 || !strings.HasPrefix(errb.String(), "tether gitlab cleanup: ") || !strings.Contains(errb.String(), "(bind the runner's identity to the Role of") {
		t.Errorf("refused: exit %d stderr %q", code, errb.String())
	}
}

// A stage whose script file the runner did not leave fails as a system
// failure, before the cluster is asked.
func TestGitLabRunWithoutTheScript(t *testing.T) {
	dir := t.TempDir()
	env := runnerEnv(t, dir, `{"id": 5}`)
	api, kc := newAPIServer(t, dir, func(w http.ResponseWriter, r *http.Request) {
		status(w, http.StatusInternalServerError, "InternalError", "no request was expected")
	})
	var out, errb bytes.Buffer
	code := Run(context.Background(), parsed(t, env, "--kubeconfig", kc), env, filepath.Join(dir, "gone"), "build_script", &out, &errb)
	if code != 42 || !strings.HasPrefix(errb.String(), "ERROR: tether: stage build_script: the stage script: ") || out.Len() != 0 {
		t.Errorf("exit %d stdout %q stderr %q", code, out.String(), errb.String())
	}
	if got := api.seen(); len(got) != 0 {
		t.Errorf("requests %q; want none", got)
	}
}

// Command knows the four commands and their arguments; anything else is a
// system failure, and a log file it cannot open is one too.
func TestGitLabCommand(t *testing.T) {
	dir := t.TempDir()
	env := runnerEnv(t, dir, "")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bogus", nil, "tether gitlab: unknown command \"bogus\": want config, prepare, run or cleanup\n"},
		{"run", []string{"script"}, "tether gitlab run: want 2 arguments, got 1\n"},
		{"cleanup", []string{"extra"}, "tether gitlab cleanup: want 0 arguments, got 1\n"},
	} {
		var out, errb bytes.Buffer
		if code := Command(context.Background(), parsed(t, env), env, tc.name, tc.args, &out, &errb); code != 42 || errb.String() != tc.want {
			t.Errorf("%s %q: exit %d stderr %q; want 42 and %q", tc.name, tc.args, code, errb.String(), tc.want)
		}
	}
	var out, errb bytes.Buffer
	cfg := parsed(t, env, "--log-file", filepath.Join(dir, "no-such-dir", "driver.log"))
	if code := Command(context.Background(), cfg, env, "config", nil, &out, &errb); code != 42 || !strings.HasPrefix(errb.String(), "ERROR: tether gitlab config: log-file: ") {
		t.Errorf("unopenable log file: exit %d stderr %q", code, errb.String())
	}
	for name, want := range map[string]int{"config": 0, "prepare": 0, "run": 2, "cleanup": 0} {
		if n, ok := CommandArgs(name); !ok || n != want {
			t.Errorf("CommandArgs(%q) = %d, %v; want %d, true", name, n, ok, want)
		}
	}
	if _, ok := CommandArgs("attach"); ok {
		t.Error("CommandArgs(attach) is a command")
	}
}

// Settings' errors name the setting, from the command line or the file.
func TestGitLabSettingsValidate(t *testing.T) {
	env := runnerEnv(t, t.TempDir(), "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--shell", "bash"}, `shell "bash" must be an absolute path in the job image`},
		{[]string{"--builds-dir", "builds"}, `builds-dir "builds" must be an absolute path`},
		{[]string{"--cache-dir", "/tether/cache"}, `cache-dir "/tether/cache" would cover /tether, where the shim lives`},
		{[]string{"--pull-policy", "sometimes"}, `pull-policy "sometimes": want Always, IfNotPresent or Never`},
		{[]string{"--allowed-pull-policies", "sometimes"}, "allowed-pull-policies: "},
		{[]string{"--log-format", "yaml"}, `log-format "yaml": want text or json`},
		{[]string{"--idle-timeout", "-1s"}, "idle-timeout must not be negative"},
		{[]string{"--ttl-margin", "0s"}, "ttl-margin must be positive"},
		{[]string{"--gitlab-helper-image", ""}, `gitlab-helper-image is empty: name an image, or "none" to run every stage in the build container`},
		{[]string{"--config", "/nonexistent/tether.yaml"}, "the driver config: "},
	} {
		var cfg Settings
		if _, err := Parse(&cfg, tc.args, env); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: %v; want %q", tc.args, err, tc.want)
		}
	}
	// The config file is $TETHER_CONFIG when no --config names one, and
	// the command line wins over it.
	file := filepath.Join(t.TempDir(), "tether.yaml")
	if err := os.WriteFile(file, []byte("namespace: from-file\nimage: alpine:3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withFile := func(name string) string {
		if name == "TETHER_CONFIG" {
			return file
		}
		return env(name)
	}
	cfg := parsed(t, withFile, "-n", "from-cli")
	if cfg.Namespace != "from-cli" || cfg.Image != "alpine:3" || cfg.Config != file {
		t.Errorf("namespace %q image %q config %q; want from-cli, alpine:3, %s", cfg.Namespace, cfg.Image, cfg.Config, file)
	}
}
