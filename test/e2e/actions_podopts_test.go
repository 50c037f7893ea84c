//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
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

// podoptsTemplate is a hook template as ARC users write them: a label, a
// variable and a mount for the job container, a sidecar and a volume.
const podoptsTemplate = `metadata:
  labels:
    from-template: "yes"
spec:
  containers:
  - name: $job
    env:
    - name: FROM_TEMPLATE
      value: template-value
    volumeMounts:
    - name: extra
      mountPath: /extra
  - name: sidecar
    image: %BUSYBOX%
    imagePullPolicy: Never
    command: [sh, -c, "echo from-sidecar > /extra/sidecar.txt && exec sleep 3600"]
    volumeMounts:
    - name: extra
      mountPath: /extra
  volumes:
  - name: extra
    emptyDir: {}
`

// TestActionsPodOptions: the hook template, the workflow's options: and
// volumes: shape the real job pod. A health-checked service makes
// prepare_job wait until it is healthy (it becomes healthy only seconds
// after it starts, by writing a file into a named volume it shares with
// the job container); the job container's first step sees that file, the
// template's variable and the sidecar's file; a container step sees the
// template's variable and mount.
func TestActionsPodOptions(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "actions-podopts")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	tmpl := filepath.Join(t.TempDir(), "template.yaml")
	if err := os.WriteFile(tmpl, []byte(strings.ReplaceAll(podoptsTemplate, "%BUSYBOX%", BusyboxImage)), 0o600); err != nil {
		t.Fatal(err)
	}
	r := newActionsRunner(t, c, ns, actions.EnvHookTemplate+"="+tmpl)
	r.JobFields = map[string]any{
		"createOptions":    "--cpus 1 --memory 300m -e OPT_VAR='from options' --shm-size 1g",
		"userMountVolumes": []any{actionsrunner.Volume("shared:/shared")},
	}
	service := actionsrunner.Container(BusyboxImage, nil, nil)
	service["entryPoint"] = "sh"
	service["entryPointArgs"] = strings.Split(`-c "sleep 8 && echo healthy > /data/health && exec sleep 3600"`, " ")
	service["createOptions"] = `--health-cmd "test -f /data/health" --health-interval 1s --health-timeout 1s --health-retries 60`
	service["userMountVolumes"] = []any{actionsrunner.Volume("shared:/data")}
	start := time.Now()
	res, err := r.PrepareJob(ctx, BashImage, nil, []map[string]any{service})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("prepare_job: %v, exit %d\nstdout %s\nstderr %s", err, res.ExitCode, res.Stdout, res.Stderr)
	}
	t.Logf("prepare_job took %s", time.Since(start))
	if !strings.Contains(string(res.Stderr), "--shm-size 1g has no meaning in a Kubernetes pod and is ignored") || strings.Contains(string(res.Stderr), "::warning::") {
		t.Errorf("prepare_job's stderr %q: want a plain warning for the ignored --shm-size", res.Stderr)
	}
	var resp hookapi.PrepareResponse
	if err := json.Unmarshal([]byte(res.Response), &resp); err != nil {
		t.Fatal(err)
	}
	pod, err := c.Client.CoreV1().Pods(ns).Get(ctx, resp.State.Pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	build := pod.Spec.Containers[0]
	if pod.Labels["from-template"] != "yes" || build.Resources.Limits.Cpu().String() != "1" || build.Resources.Limits.Memory().String() != "300Mi" {
		t.Errorf("pod labels %v, job container resources %+v", pod.Labels, build.Resources)
	}
	var svc *corev1.ContainerStatus
	for i, s := range pod.Status.InitContainerStatuses {
		if s.Image != "" && strings.Contains(s.Name, "busybox") {
			svc = &pod.Status.InitContainerStatuses[i]
		}
	}
	if svc == nil || svc.Started == nil || !*svc.Started {
		t.Errorf("the service's status %+v: want started (its startup probe passed)", svc)
	}

	// The job container started only once the service was healthy: the
	// file the service writes before it becomes healthy is there at once.
	res = mustStep(ctx, t, r, actionsrunner.Step{Script: `cat /shared/health
printf '%s|%s\n' "$FROM_TEMPLATE" "$OPT_VAR"
for i in $(seq 1 40); do [ -s /extra/sidecar.txt ] && break; sleep 0.5; done
cat /extra/sidecar.txt`})
	if want := "healthy\ntemplate-value|from options\nfrom-sidecar\n"; res.ExitCode != 0 || string(res.Stdout) != want {
		t.Errorf("step: exit %d, stdout %q, want %q; stderr %s", res.ExitCode, res.Stdout, want, res.Stderr)
	}

	// A container step gets the template's $job variable and mount too.
	res, err = r.RunContainer(ctx, actionsrunner.ContainerStep{Image: BusyboxImage, EntryPoint: "sh",
		Args: []string{"-c", "echo $FROM_TEMPLATE; cat /extra/sidecar.txt"}})
	if want := "template-value\nfrom-sidecar\n"; err != nil || res.ExitCode != 0 || string(res.Stdout) != want {
		t.Errorf("container step: %v, exit %d, stdout %q, want %q; stderr %s", err, res.ExitCode, res.Stdout, want, res.Stderr)
	}
	cleanupLeavesNothing(ctx, t, c, ns, r)
}

// TestActionsPodOptionsRefused: a bad hook template, a template that would
// break Tether's pod, malformed options and a runner-host volume each fail
// prepare_job with an error naming what is wrong, and leave nothing.
func TestActionsPodOptionsRefused(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "actions-podopts-bad")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, tc := range map[string]struct {
		template string
		job      map[string]any
		want     string
	}{
		"missing template":   {template: filepath.Join(dir, "missing.yaml"), want: actions.EnvHookTemplate},
		"not YAML":           {template: write("bad.yaml", "spec: [unbalanced\n"), want: "not valid YAML"},
		"not a template":     {template: write("pod.yaml", "apiVersion: v1\nkind: Pod\n"), want: "not a PodTemplateSpec"},
		"shim's command":     {template: write("cmd.yaml", "spec:\n  containers:\n  - name: $job\n    command: [sleep, infinity]\n"), want: "command"},
		"restart policy":     {template: write("restart.yaml", "spec:\n  restartPolicy: Always\n"), want: "restartPolicy"},
		"malformed options":  {job: map[string]any{"createOptions": `--health-cmd "unbalanced`}, want: "unterminated"},
		"option value":       {job: map[string]any{"createOptions": "--memory"}, want: "--memory needs a value"},
		"runner-host volume": {job: map[string]any{"userMountVolumes": []any{actionsrunner.Volume("/srv/data:/data")}}, want: "path on the runner's host"},
	} {
		var env []string
		if tc.template != "" {
			env = append(env, actions.EnvHookTemplate+"="+tc.template)
		}
		r := newActionsRunner(t, c, ns, env...)
		r.JobFields = tc.job
		res, err := r.PrepareJob(ctx, BashImage, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.ExitCode == 0 || !strings.Contains(string(res.Stderr), tc.want) {
			t.Errorf("%s: exit %d, stderr %q, want non-zero and %q", name, res.ExitCode, res.Stderr, tc.want)
		}
		if res, err := r.CleanupJob(ctx); err != nil || res.ExitCode != 0 {
			t.Errorf("%s: cleanup_job after the failed prepare: %v, exit %d, stderr %s", name, err, res.ExitCode, res.Stderr)
		}
	}
	waitNoTetherObjects(ctx, t, c, ns, 2*time.Minute)
}
