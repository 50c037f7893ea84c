package kube

import (
	"path"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A pod with a helper container and an idle timeout gives both shims the
// same activity file, on the tether emptyDir both mount; a pod with one
// shim, or without an idle timeout, gives none.
func TestBuildActivityFile(t *testing.T) {
	const flag = "--activity-file=" + ActivityFile
	spec := testSpec()
	spec.Helper = &Helper{Image: "registry.example/helper:1"}
	objs, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	ps := objs.Pod.Spec
	tether := slices.IndexFunc(ps.Volumes, func(v corev1.Volume) bool { return v.Name == "tether" })
	if tether < 0 || ps.Volumes[tether].EmptyDir == nil {
		t.Fatalf("no tether emptyDir in %+v", ps.Volumes)
	}
	for _, c := range []corev1.Container{ps.Containers[0], ps.InitContainers[1]} {
		if !slices.Contains(c.Args, flag) {
			t.Errorf("%s container args %v lack %s", c.Name, c.Args, flag)
		}
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
			return m.Name == "tether" && m.MountPath == path.Dir(ActivityFile) && !m.ReadOnly
		}) {
			t.Errorf("%s container does not mount the tether emptyDir writable at %s: %+v", c.Name, path.Dir(ActivityFile), c.VolumeMounts)
		}
	}

	for name, s := range map[string]Spec{"no helper": testSpec(), "no idle timeout": func() Spec {
		s := testSpec()
		s.Helper, s.IdleTimeout = &Helper{Image: "h"}, 0
		return s
	}()} {
		objs, err := Build(s)
		if err != nil {
			t.Fatal(err)
		}
		if args := objs.Pod.Spec.Containers[0].Args; slices.Contains(args, flag) {
			t.Errorf("%s: build args %v name an activity file", name, args)
		}
	}
}
