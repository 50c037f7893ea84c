package actions

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// exampleTemplate is shaped like the runner container hooks' example
// extension: metadata, a pod-spec field, $job, a service, a sidecar and a
// volume.
const exampleTemplate = `
metadata:
  labels:
    team: infra
    tether.dev/job: mine
  annotations:
    note: hello
spec:
  priorityClassName: ci-high
  nodeSelector:
    pool: ci
  securityContext:
    fsGroup: 1001
  containers:
  - name: $job
    image: ignored
    env:
    - name: FROM_TEMPLATE
      value: "yes"
    volumeMounts:
    - name: extra
      mountPath: /extra
    resources:
      limits:
        memory: 2Gi
  - name: $redis
    env:
    - name: REDIS_ARGS
      value: --save ""
  - name: sidecar
    image: busybox
    command: [sleep, infinity]
  volumes:
  - name: extra
    emptyDir: {}
`

func TestTemplateMergesLikeTheReferenceHook(t *testing.T) {
	args := &PrepareJobArgs{Container: &Container{Image: "busybox", EnvironmentVariables: map[string]string{"JOB": "1"}, CreateOptions: "--memory 1g --cpus 1"},
		Services: []Container{{Image: "redis:7", EnvironmentVariables: map[string]string{"R": "1"}}}}
	pod, warnings, err := shapedPod(t, args, exampleTemplate)
	if err != nil {
		t.Fatal(err)
	}
	if pod.Labels["team"] != "infra" || pod.Labels["tether.dev/job"] == "mine" || pod.Annotations["note"] != "hello" {
		t.Errorf("labels %v annotations %v: want the template's added, Tether's kept", pod.Labels, pod.Annotations)
	}
	ps := pod.Spec
	if ps.PriorityClassName != "ci-high" || ps.NodeSelector["pool"] != "ci" || ps.SecurityContext == nil || *ps.SecurityContext.FSGroup != 1001 {
		t.Errorf("pod spec fields: %+v", ps)
	}
	build := ps.Containers[0]
	if build.Image != "busybox" || envOf(&build)["FROM_TEMPLATE"] != "yes" || build.Resources.Limits.Memory().String() != "2Gi" || build.Resources.Limits.Cpu() != nil && !build.Resources.Limits.Cpu().IsZero() {
		t.Errorf("job container %+v: want the template's env added and its resources replacing the options'", build)
	}
	if !slices.ContainsFunc(build.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "extra" }) || !slices.ContainsFunc(build.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/tether" }) {
		t.Errorf("job mounts %+v: want the template's appended to Tether's", build.VolumeMounts)
	}
	if !slices.ContainsFunc(ps.Volumes, func(v corev1.Volume) bool { return v.Name == "extra" }) || !slices.ContainsFunc(ps.Volumes, func(v corev1.Volume) bool { return v.Name == "tether" }) {
		t.Errorf("volumes %+v", ps.Volumes)
	}
	var redis, sidecar *corev1.Container
	for i := range ps.InitContainers {
		switch c := &ps.InitContainers[i]; {
		case c.Image == "redis:7":
			redis = c
		case c.Name == "sidecar":
			sidecar = c
		}
	}
	if redis == nil || envOf(redis)["R"] != "1" || envOf(redis)["REDIS_ARGS"] != `--save ""` {
		t.Errorf("redis %+v: want the template's env appended", redis)
	}
	if sidecar == nil || sidecar.RestartPolicy == nil || *sidecar.RestartPolicy != corev1.ContainerRestartPolicyAlways || ps.InitContainers[len(ps.InitContainers)-1].Name != "sidecar" {
		t.Errorf("sidecar %+v: want a native sidecar after the services", sidecar)
	}
	if len(ps.Containers) != 1 {
		t.Errorf("containers %d: the template's sidecar must not be a regular container (it would keep the pod alive)", len(ps.Containers))
	}
	if !strings.Contains(strings.Join(warnings, "\n"), "image is ignored") {
		t.Errorf("warnings %q: want one for the ignored $job image", warnings)
	}
}

func TestTemplateRefusesWhatBreaksThePod(t *testing.T) {
	args := func() *PrepareJobArgs {
		return &PrepareJobArgs{Container: &Container{Image: "busybox", EnvironmentVariables: map[string]string{"A": "1"}}, Services: []Container{{Image: "redis"}}}
	}
	for _, tc := range []struct{ template, want string }{
		{"spec:\n  containers:\n  - name: $job\n    command: [sh]\n", "command"},
		{"spec:\n  containers:\n  - name: $job\n    args: [x]\n", "args"},
		{"spec:\n  containers:\n  - name: $job\n    stdin: false\n", "stdin"},
		{"spec:\n  containers:\n  - name: $job\n    tty: true\n", "tty"},
		{"spec:\n  containers:\n  - name: $job\n    volumeMounts: [{name: v, mountPath: /tether/bin}]\n  volumes: [{name: v, emptyDir: {}}]\n", "/tether"},
		{"spec:\n  restartPolicy: Always\n", "restartPolicy"},
		{"spec:\n  initContainers: [{name: x, image: y}]\n", "initContainers"},
		{"spec:\n  activeDeadlineSeconds: null\n", "activeDeadlineSeconds"},
		{"spec:\n  activeDeadlineSeconds: 999999\n", "activeDeadlineSeconds"},
		{"spec:\n  volumes: [{name: tether, emptyDir: {}}]\n", "spec.volumes"},
		{"spec:\n  containers:\n  - name: $job\n    envFrom: []\n  - name: $postgres\n", "no service"},
		{"spec:\n  containers:\n  - name: $postgres\n", "no service"},
		{"spec:\n  containers:\n  - name: side\n", "no image"},
		{"spec:\n  containers:\n  - image: x\n", "no name"},
		{"spec:\n  containers:\n  - name: build\n    image: x\n", "already has"},
		{"metadata:\n  labels:\n    a: b\nspec:\n  nodeSelectr: {}\n", "nodeSelectr"},
		{"kind: Pod\n", "kind"},
		{"spec: [unbalanced\n", "not valid YAML"},
		{"   \n", "empty"},
	} {
		_, _, err := shapedPod(t, args(), tc.template)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), EnvHookTemplate) {
			t.Errorf("template %q: error %v, want one naming %s and %q", tc.template, err, EnvHookTemplate, tc.want)
		}
	}
}

func TestTemplateLowersTheDeadline(t *testing.T) {
	pod, _, err := shapedPod(t, &PrepareJobArgs{Container: &Container{Image: "b"}}, "spec:\n  activeDeadlineSeconds: 60\n")
	if err != nil || *pod.Spec.ActiveDeadlineSeconds != 60 {
		t.Errorf("a lower deadline: %v", err)
	}
}

func TestTemplateFileMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.yaml")
	_, err := planShape(&PrepareJobArgs{Container: &Container{Image: "b"}}, path, func(string, ...any) {})
	if err == nil || !strings.Contains(err.Error(), EnvHookTemplate) || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing template: %v", err)
	}
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, []byte("metadata: {}\n"+strings.Repeat("#", maxTemplate)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := planShape(&PrepareJobArgs{Container: &Container{Image: "b"}}, big, func(string, ...any) {}); err == nil || !strings.Contains(err.Error(), "larger") {
		t.Errorf("large template: %v", err)
	}
}
