package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// structured matches a slog record in text or JSON form.
var structured = regexp.MustCompile(`(?m)(^time=|level=|"level":)`)

// By default `tether gitlab` writes no structured record to stdout or
// stderr (the job log); -v and --log-format write them to stderr, and
// --log-file to the file alone.
func TestGitLabStructuredLogOnlyWhenAsked(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "job.json")
	os.WriteFile(job, []byte(`{"id": 5, "image": {"name": "alpine:3"}}`), 0o600)
	script := filepath.Join(dir, "script")
	os.WriteFile(script, []byte("echo hi\n"), 0o700)
	// The API server refuses the credentials: the run fails at its first
	// API call, after client-go logged its request.
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`)
	}))
	defer refusing.Close()
	kc := filepath.Join(dir, "kubeconfig")
	os.WriteFile(kc, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: ci}}]
current-context: c
`, refusing.URL)), 0o600)
	logFile := filepath.Join(dir, "driver.log")
	env := []string{"JOB_RESPONSE_FILE=" + job}
	base := []string{"run", "--kubeconfig", kc, "--gitlab-helper-image", "none", script, "step_script"}
	for _, tc := range []struct {
		name       string
		args       []string
		wantStderr string // a record stderr must hold, "" for none
	}{
		{"default", nil, ""},
		{"verbose", []string{"-v"}, "level=DEBUG"},
		{"json", []string{"--log-format", "json", "--verbose"}, `"level":"DEBUG"`},
		{"log file", []string{"--log-file", logFile, "-v"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errb, code := gitlabCLI(t, dir, env, append(append([]string{}, base[:1]...), append(tc.args, base[1:]...)...)...)
			if code != 42 || !strings.Contains(out+errb, "Unauthorized (the API server refused the runner's credentials") {
				t.Fatalf("exit %d stdout %q stderr %q; want the system failure with the credentials' advice", code, out, errb)
			}
			if structured.MatchString(out) {
				t.Errorf("a structured record on stdout: %q", out)
			}
			switch {
			case tc.wantStderr == "" && structured.MatchString(errb):
				t.Errorf("a structured record on stderr: %q", errb)
			case tc.wantStderr != "" && !strings.Contains(errb, tc.wantStderr):
				t.Errorf("stderr %q; want %s records", errb, tc.wantStderr)
			}
		})
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	// Full times in a file many processes append to, and each record
	// names its command, job and stage.
	if !regexp.MustCompile(`(?m)^time=\d{4}-\d\d-\d\dT\S+ level=DEBUG .*command=run job=5 stage=step_script`).Match(b) {
		t.Errorf("log file:\n%s", b)
	}
	// A bad log-format is a system failure naming the key.
	if out, errb, code := gitlabCLI(t, dir, nil, "config", "--log-format", "yaml"); code != 42 || !strings.Contains(out+errb, `log-format "yaml": want text or json`) {
		t.Errorf("log-format yaml: exit %d %q %q", code, out, errb)
	}
}
