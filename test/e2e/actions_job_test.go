//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/integration/actions"
	"github.com/tether-ci/tether/integration/actions/hookapi"
	"github.com/tether-ci/tether/internal/testing/actionsrunner"
)

// TestActionsJob drives `tether actions` through the runner stand-in for
// a whole job: a job container and a service, script steps (output byte
// for byte, exit codes, env, PATH, a working directory with a space), the
// file commands round trip, and a cleanup that leaves nothing.
func TestActionsJob(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "actions")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	// The runner's pod (here a stand-in pod) owns the job's pod.
	owner := c.CreatePod(ctx, t, SimplePod(ns, "runner-0", BusyboxImage, "sleep", "3600"))
	// The pod settings of tether run, from TETHER_ACTIONS_CONFIG.
	config := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(config, []byte("label: {team: ci}\nmemory: 256Mi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := newActionsRunner(t, c, ns, actions.EnvRunnerPodName+"=runner-0", actions.EnvConfig+"="+config)
	r.JobRegistry = map[string]string{"username": "ci", "password": "s3cret-token", "serverUrl": "registry.example.com"}

	service := actionsrunner.Container(BusyboxImage, map[string]string{"GREETING": "service-says-hi"}, []string{"8080:8080/tcp"})
	service["entryPoint"] = "sh"
	service["entryPointArgs"] = strings.Split(`-c "mkdir -p /tmp/www && echo $GREETING > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www"`, " ")
	res, err := r.PrepareJob(ctx, BashImage, map[string]string{"JOB_VAR": "from-container-env"}, []map[string]any{service})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("prepare_job: %v, exit %d\nstdout %s\nstderr %s", err, res.ExitCode, res.Stdout, res.Stderr)
	}
	var resp hookapi.PrepareResponse
	if err := json.Unmarshal([]byte(res.Response), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.IsAlpine || len(resp.Context.Services) != 1 || resp.Context.Services[0].Ports["8080"] != "8080" || resp.State == nil {
		t.Fatalf("response %s", res.Response)
	}
	pod, err := c.Client.CoreV1().Pods(ns).Get(ctx, resp.State.Pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if refs := pod.OwnerReferences; len(refs) != 1 || refs[0].UID != owner.UID {
		t.Errorf("job pod's ownerReferences %+v, want the runner pod %s", refs, owner.UID)
	}
	if pod.Spec.ActiveDeadlineSeconds == nil {
		t.Errorf("job pod has no activeDeadlineSeconds")
	}
	if pod.Labels["team"] != "ci" || pod.Spec.Containers[0].Resources.Limits.Memory().String() != "256Mi" {
		t.Errorf("the config file's settings: labels %v, resources %+v", pod.Labels, pod.Spec.Containers[0].Resources)
	}
	// The registry credentials are a pull Secret owned by the pod, never in
	// the pod spec.
	if len(pod.Spec.ImagePullSecrets) != 1 {
		t.Fatalf("imagePullSecrets %+v, want the job's pull Secret", pod.Spec.ImagePullSecrets)
	}
	pull, err := c.Client.CoreV1().Secrets(ns).Get(ctx, pod.Spec.ImagePullSecrets[0].Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if refs := pull.OwnerReferences; len(refs) != 1 || refs[0].UID != pod.UID || pull.Type != corev1.SecretTypeDockerConfigJson ||
		!strings.Contains(string(pull.Data[corev1.DockerConfigJsonKey]), `"registry.example.com":{"auth":"Y2k6czNjcmV0LXRva2Vu"`) {
		t.Errorf("pull Secret %s: type %s, owners %+v, data %s", pull.Name, pull.Type, refs, pull.Data[corev1.DockerConfigJsonKey])
	}

	res = mustStep(ctx, t, r, actionsrunner.Step{Script: "echo hello\nmkdir -p 'dir with space'\nprintf 'no newline'"})
	if res.ExitCode != 0 || string(res.Stdout) != "hello\nno newline" {
		t.Errorf("step 1: exit %d, stdout %q, stderr %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	res = mustStep(ctx, t, r, actionsrunner.Step{Script: "echo failing >&2\nexit 3"})
	if res.ExitCode != 3 || string(res.Stdout) != "" || string(res.Stderr) != "failing\n" {
		t.Errorf("step 2: exit %d, stdout %q, stderr %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	res = mustStep(ctx, t, r, actionsrunner.Step{Script: `echo "FOO=bar baz" >> "$GITHUB_ENV"
printf 'MULTI<<EOF\nline 1\nline 2\nEOF\n' >> "$GITHUB_ENV"
echo /opt/mytools >> "$GITHUB_PATH"
echo "answer=42" >> "$GITHUB_OUTPUT"
printf '# summary' >> "$GITHUB_STEP_SUMMARY"
`})
	if res.ExitCode != 0 || r.JobEnv["FOO"] != "bar baz" || r.JobEnv["MULTI"] != "line 1\nline 2" ||
		r.Outputs["answer"] != "42" || string(r.Summary) != "# summary" || len(r.PrependPath) != 1 || r.PrependPath[0] != "/opt/mytools" {
		t.Errorf("step 3: exit %d, env %q, outputs %q, summary %q, path %q, stderr %s", res.ExitCode, r.JobEnv, r.Outputs, r.Summary, r.PrependPath, res.Stderr)
	}
	res = mustStep(ctx, t, r, actionsrunner.Step{
		Script:           `printf '%s|%s|%s|%s|%s|%s\n' "$FOO" "$MULTI" "$(pwd)" "$STEP_VAR" "$HOME" "$JOB_VAR"; echo "$PATH"`,
		Env:              map[string]string{"STEP_VAR": "it's \"quoted\" $NOT"},
		WorkingDirectory: r.Workspace() + "/dir with space",
	})
	want := "bar baz|line 1\nline 2|" + r.Workspace() + "/dir with space|it's \"quoted\" $NOT|/github/home|from-container-env\n/opt/mytools:"
	if res.ExitCode != 0 || !strings.HasPrefix(string(res.Stdout), want) {
		t.Errorf("step 4: exit %d, stdout %q, want it to start with %q; stderr %s", res.ExitCode, res.Stdout, want, res.Stderr)
	}
	res = mustStep(ctx, t, r, actionsrunner.Step{Script: "wget -qO- http://localhost:8080/ && wget -qO- http://busybox:8080/ && cat \"$GITHUB_EVENT_PATH\""})
	if res.ExitCode != 0 || string(res.Stdout) != "service-says-hi\nservice-says-hi\n"+`{"ref":"refs/heads/main"}` {
		t.Errorf("step 5 (service, event): exit %d, stdout %q, stderr %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	// 20 MiB of output, byte for byte.
	const big = 20 << 20
	res = mustStep(ctx, t, r, actionsrunner.Step{Script: fmt.Sprintf("set +o pipefail # yes ends by SIGPIPE\nyes 'twenty mebibytes of output, line after line' | head -c %d", big)})
	line := []byte("twenty mebibytes of output, line after line\n")
	wantBig := bytes.Repeat(line, big/len(line)+1)[:big]
	if res.ExitCode != 0 || !bytes.Equal(res.Stdout, wantBig) {
		t.Errorf("20 MiB step: exit %d, %d bytes (equal: %v), stderr %s", res.ExitCode, len(res.Stdout), bytes.Equal(res.Stdout, wantBig), res.Stderr)
	}
	res = mustStep(ctx, t, r, actionsrunner.Step{Script: `printf '\000\001\377\r\n\033[31mred'`})
	if res.ExitCode != 0 || string(res.Stdout) != "\x00\x01\xff\r\n\x1b[31mred" {
		t.Errorf("step 6 (binary output): exit %d, stdout %q, stderr %s", res.ExitCode, res.Stdout, res.Stderr)
	}

	for i := range 2 { // idempotent
		res, err = r.CleanupJob(ctx)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("cleanup_job %d: %v, exit %d, stderr %s", i, err, res.ExitCode, res.Stderr)
		}
	}
	waitNoTetherObjects(ctx, t, c, ns, 2*time.Minute)
}

// TestActionsBadInput: each kind of bad input is a clear error and a
// non-zero exit, and leaves nothing in the cluster.
func TestActionsBadInput(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "actions-bad")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r := newActionsRunner(t, c, ns)
	for name, tc := range map[string]struct{ input, want string }{
		"unknown command":    {`{"command":"run_everything","responseFile":"/tmp/x","args":{},"state":null}`, `unknown command "run_everything"`},
		"malformed JSON":     {`{"command":"prepare_job",`, "not the runner's JSON object"},
		"no responseFile":    {`{"command":"prepare_job","args":{},"state":null}`, "no responseFile"},
		"no job container":   {`{"command":"prepare_job","responseFile":"/tmp/x","args":{"container":null,"services":[]},"state":null}`, "set container:"},
		"step without state": {`{"command":"run_script_step","responseFile":"/tmp/x","args":{"entryPoint":"sh"},"state":null}`, "prepare_job did not run"},
	} {
		res, err := r.Start(ctx, []byte(tc.input+"\n"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.ExitCode == 0 || !strings.Contains(string(res.Stderr), tc.want) {
			t.Errorf("%s: exit %d, stderr %q, want non-zero and %q", name, res.ExitCode, res.Stderr, tc.want)
		}
	}
	res, err := r.PrepareJob(ctx, "localhost/tether/no-such-image:1", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == 0 || !strings.Contains(string(res.Stderr), "did not start") {
		t.Errorf("an image that cannot be pulled: exit %d, stderr %q", res.ExitCode, res.Stderr)
	}
	// cleanup_job after the failed prepare_job (no state) succeeds.
	if res, err := r.CleanupJob(ctx); err != nil || res.ExitCode != 0 {
		t.Errorf("cleanup_job after a failed prepare: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
	}
	waitNoTetherObjects(ctx, t, c, ns, 2*time.Minute)
}
