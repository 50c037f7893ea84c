package actions

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tether-ci/tether/client/kube"
)

// The externals' image: the setting, else ACTIONS_RUNNER_IMAGE, else the
// runner pod's runner container (else its first); "none" switches it off.
func TestExternalsImage(t *testing.T) {
	runner := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "sidecar", Image: "side"}, {Name: "runner", Image: "arc-runner:2"}}}}
	first := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "first"}}}}
	for _, c := range []struct {
		env     map[string]string
		runner  *corev1.Pod
		want    string
		guessed bool
	}{
		{map[string]string{EnvExternalsImage: "mine", EnvRunnerImage: "arc"}, runner, "mine", false},
		{map[string]string{EnvRunnerImage: "arc"}, runner, "arc", false},
		{nil, runner, "arc-runner:2", true},
		{nil, first, "first", true},
		{nil, nil, "", false},
		{map[string]string{EnvExternalsImage: "none", EnvRunnerImage: "arc"}, runner, "", false},
	} {
		if got, guessed := externalsImage(func(k string) string { return c.env[k] }, c.runner); got != c.want || guessed != c.guessed {
			t.Errorf("env %v: %q (guessed %v), want %q (%v)", c.env, got, guessed, c.want, c.guessed)
		}
	}
	// The runner pod's image: a missing directory is no error.
	spec := kube.Spec{}
	if err := addExternals(&spec, func(string) string { return "" }, runner); err != nil || len(spec.ImageCopies) != 1 || !spec.ImageCopies[0].Optional {
		t.Errorf("the runner pod's image: %v, %+v", err, spec.ImageCopies)
	}
}

// addExternals mounts the emptyDir read-only at /__e and copies the
// externals directory into it; the spec builds into a pod whose copy runs
// after the shim's and before the services.
func TestAddExternals(t *testing.T) {
	env := map[string]string{EnvExternalsImage: "runner:1", EnvExternalsDir: "/opt/runner/externals"}
	spec := kube.Spec{Namespace: "n", Image: "job", Serve: true, Services: []kube.Service{{Image: "redis:7"}}}
	if err := addExternals(&spec, func(k string) string { return env[k] }, nil); err != nil {
		t.Fatal(err)
	}
	objs, err := kube.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	inits := objs.Pod.Spec.InitContainers
	if len(inits) != 3 || inits[0].Name != kube.InitContainer || inits[1].Name != kube.ImageCopyPrefix+"externals" {
		t.Fatalf("init containers %v", inits)
	}
	cp := inits[1]
	if cp.Image != "runner:1" || !strings.Contains(strings.Join(cp.Command, " "), "/opt/runner/externals") {
		t.Errorf("copy container %s %q", cp.Image, cp.Command)
	}
	var mount *corev1.VolumeMount
	for i, m := range objs.Pod.Spec.Containers[0].VolumeMounts {
		if m.MountPath == ExternalsDir {
			mount = &objs.Pod.Spec.Containers[0].VolumeMounts[i]
		}
	}
	if mount == nil || !mount.ReadOnly || mount.Name != cp.VolumeMounts[0].Name {
		t.Errorf("job container mount of %s: %+v", ExternalsDir, mount)
	}

	env[EnvExternalsDir] = "relative"
	if err := addExternals(&kube.Spec{}, func(k string) string { return env[k] }, nil); err == nil || !strings.Contains(err.Error(), EnvExternalsDir) {
		t.Errorf("relative dir: %v", err)
	}
	off := kube.Spec{}
	if err := addExternals(&off, func(k string) string { return map[string]string{EnvExternalsImage: "none"}[k] }, nil); err != nil || len(off.ImageCopies)+len(off.Volumes) != 0 {
		t.Errorf("none: %v, %+v", err, off)
	}
	for _, err := range []error{
		&kube.InitContainerError{Namespace: "ci", Pod: "x", Container: kube.ImageCopyPrefix + externalsCopy, ExitCode: 1},
		fmt.Errorf("wait: %w", &kube.ImagePullError{Namespace: "ci", Pod: "x", Container: kube.ImageCopyPrefix + externalsCopy, Reason: "ErrImagePull"}),
	} {
		if h := externalsHint(err); !strings.Contains(h, EnvExternalsImage+"=none") {
			t.Errorf("%v: hint %q", err, h)
		}
	}
	// Only the type says which container failed: text naming the copy
	// is not read.
	for _, err := range []error{
		errors.New("init container tether-copy-externals of pod x failed"),
		&kube.ImagePullError{Namespace: "ci", Pod: "x", Container: kube.BuildContainer, Image: "tether-copy-externals", Reason: "ErrImagePull"},
	} {
		if h := externalsHint(err); h != "" {
			t.Errorf("%v: hint %q, want none", err, h)
		}
	}
}
