package kube

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The helper container runs the same shim in serve mode with its own
// spool, the build container's mounts (user volumes included) and no job
// variables, as a native sidecar started right after the shim's copy.
func TestBuildWithHelperContainer(t *testing.T) {
	spec := testSpec()
	spec.Env = map[string]string{"TOKEN": "secret-value"}
	spec.Volumes = []corev1.Volume{{Name: "builds", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	spec.VolumeMounts = []corev1.VolumeMount{{Name: "builds", MountPath: "/builds"}}
	spec.Services = []Service{{Image: "redis:7"}}
	spec.Helper = &Helper{Image: "registry.example/helper:1", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}}}
	objs, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	ps := objs.Pod.Spec
	if len(ps.InitContainers) != 3 || ps.InitContainers[1].Name != HelperContainer || ps.InitContainers[2].Name != "svc-0-redis" {
		t.Fatalf("init containers %v, want tether-init, helper, the service", names(ps.InitContainers))
	}
	h, build := ps.InitContainers[1], ps.Containers[0]
	if h.Image != "registry.example/helper:1" || h.Command[0] != ShimPath || !h.Stdin || h.RestartPolicy == nil ||
		*h.RestartPolicy != corev1.ContainerRestartPolicyAlways || !h.Resources.Limits.Memory().Equal(resource.MustParse("128Mi")) {
		t.Errorf("helper container %+v", h)
	}
	if !slices.Contains(h.Args, "--spool-dir="+HelperSpoolDir) || slices.Contains(h.Args, "--spool-dir="+SpoolDir) {
		t.Errorf("helper args %v: want its own spool", h.Args)
	}
	if len(h.Args) != len(build.Args) {
		t.Errorf("helper args %v, build args %v: want the same flags", h.Args, build.Args)
	}
	for _, want := range []string{"tether", "files", "podinfo", "builds"} {
		if !slices.ContainsFunc(h.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == want }) {
			t.Errorf("helper mounts %+v lack %s", h.VolumeMounts, want)
		}
	}
	if len(h.Env)+len(h.EnvFrom) != 0 {
		t.Errorf("helper gets the job's variables: %+v %+v", h.Env, h.EnvFrom)
	}
}

func TestBuildHelperErrors(t *testing.T) {
	spec := testSpec()
	spec.Helper = &Helper{}
	if _, err := Build(spec); err == nil || !strings.Contains(err.Error(), "Spec.Helper has no image") {
		t.Errorf("no image: %v", err)
	}
	spec.Helper = &Helper{Image: "h"}
	spec.Services = []Service{{Name: HelperContainer, Image: "redis"}}
	if _, err := Build(spec); err == nil || !strings.Contains(err.Error(), "used twice") {
		t.Errorf("service named helper: %v", err)
	}
}

func names(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}
