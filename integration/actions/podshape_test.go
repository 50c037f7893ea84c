package actions

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/actions/hookapi"
)

// shapedPod runs what PrepareJob runs before creating the pod: planShape,
// jobSpec, shapeSpec, kube.Build and shapeObjects; warnings are returned.
func shapedPod(t *testing.T, args *PrepareJobArgs, template string) (*corev1.Pod, []string, error) {
	t.Helper()
	path := ""
	if template != "" {
		path = filepath.Join(t.TempDir(), "template.yaml")
		if err := os.WriteFile(path, []byte(template), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var warnings []string
	warn := func(f string, a ...any) { warnings = append(warnings, fmt.Sprintf(f, a...)) }
	shape, err := planShape(args, path, warn)
	if err != nil {
		return nil, warnings, err
	}
	spec, err := jobSpec(Settings{JobTimeout: time.Hour}, args, "ns", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := shape.shapeSpec(&spec); err != nil {
		return nil, warnings, err
	}
	objs, err := kube.Build(spec)
	if err != nil {
		return nil, warnings, err
	}
	if err := shapeObjects(shape, objs, args.Services, warn); err != nil {
		return nil, warnings, err
	}
	return objs.Pod, warnings, nil
}

func envOf(c *corev1.Container) map[string]string {
	m := map[string]string{}
	for _, e := range c.Env {
		m[e.Name] = e.Value
	}
	return m
}

func TestCreateOptionsShapeThePod(t *testing.T) {
	args := &PrepareJobArgs{
		Container: &Container{Image: "busybox", CreateOptions: "--cpus 2 --memory 1g --user 1000 --hostname builder -w /src -e OPT=1 --shm-size 1g --entrypoint /x"},
		Services:  []Container{{Image: "postgres:16", CreateOptions: `--health-cmd "pg_isready" --health-interval 1s --health-retries 5 -e POSTGRES_PASSWORD=pw --cap-add NET_ADMIN --hostname db`}},
	}
	pod, warnings, err := shapedPod(t, args, "")
	if err != nil {
		t.Fatal(err)
	}
	build := pod.Spec.Containers[0]
	if !build.Resources.Requests.Cpu().IsZero() || !build.Resources.Requests.Memory().IsZero() {
		t.Errorf("requests %v: --cpus and --memory reserve nothing (docker's are caps), so the requests must be zero, not the limits", build.Resources.Requests)
	}
	if _, set := build.Resources.Requests[corev1.ResourceCPU]; !set {
		t.Error("no explicit cpu request: Kubernetes would default it to the limit")
	}
	if build.Resources.Limits.Cpu().String() != "2" || build.Resources.Limits.Memory().String() != "1Gi" || *build.SecurityContext.RunAsUser != 1000 || build.WorkingDir != "/src" || pod.Spec.Hostname != "builder" {
		t.Errorf("build container %+v, hostname %q", build, pod.Spec.Hostname)
	}
	if !slices.Equal(build.Command, []string{kube.ShimPath}) {
		t.Errorf("build command %v: --entrypoint must not replace the shim", build.Command)
	}
	pg := pod.Spec.InitContainers[len(pod.Spec.InitContainers)-1]
	if pg.StartupProbe == nil || pg.StartupProbe.PeriodSeconds != 1 || pg.StartupProbe.FailureThreshold != 5 || envOf(&pg)["POSTGRES_PASSWORD"] != "pw" ||
		!slices.Contains(pg.SecurityContext.Capabilities.Add, "NET_ADMIN") {
		t.Errorf("postgres %+v", pg)
	}
	joined := strings.Join(warnings, "\n")
	for _, want := range []string{"--shm-size 1g has no meaning", "--entrypoint is ignored", "service 0 (postgres:16): option --hostname is ignored"} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings %q lack %q", joined, want)
		}
	}
}

func TestCreateOptionsRefused(t *testing.T) {
	for _, tc := range []struct {
		args *PrepareJobArgs
		want string
	}{
		{&PrepareJobArgs{Container: &Container{Image: "b", CreateOptions: "--memory"}}, "the job container: its options"},
		{&PrepareJobArgs{Container: &Container{Image: "b"}, Services: []Container{{Image: "redis", CreateOptions: "--cpus x"}}}, "service 0 (redis): its options"},
		{&PrepareJobArgs{Container: &Container{Image: "b", CreateOptions: "--health-cmd true"}}, "services only"},
		{&PrepareJobArgs{Container: &Container{Image: "b", CreateOptions: "-e TETHER_GRACE=1"}}, "reserved"},
		{&PrepareJobArgs{Container: &Container{Image: "b", CreateOptions: "--hostname Not_Valid"}}, "--hostname"},
	} {
		if _, _, err := shapedPod(t, tc.args, ""); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.args.Container, err, tc.want)
		}
	}
}

func TestNamedVolumeSharedByServiceAndJob(t *testing.T) {
	args := &PrepareJobArgs{
		Container: &Container{Image: "busybox", UserMountVolumes: []hookapi.Mount{{SourceVolumePath: "shared", TargetVolumePath: "/shared"}, {TargetVolumePath: "/scratch"}}},
		Services:  []Container{{Image: "redis", UserMountVolumes: []hookapi.Mount{{SourceVolumePath: "shared", TargetVolumePath: "/data", ReadOnly: true}}}},
	}
	pod, _, err := shapedPod(t, args, "")
	if err != nil {
		t.Fatal(err)
	}
	mount := func(c corev1.Container, path string) *corev1.VolumeMount {
		for i := range c.VolumeMounts {
			if c.VolumeMounts[i].MountPath == path {
				return &c.VolumeMounts[i]
			}
		}
		return nil
	}
	jm, sm := mount(pod.Spec.Containers[0], "/shared"), mount(pod.Spec.InitContainers[len(pod.Spec.InitContainers)-1], "/data")
	if jm == nil || sm == nil || jm.Name != sm.Name || !sm.ReadOnly || jm.ReadOnly {
		t.Fatalf("job mount %+v, service mount %+v: want one volume, read-only in the service", jm, sm)
	}
	if anon := mount(pod.Spec.Containers[0], "/scratch"); anon == nil || anon.Name == jm.Name {
		t.Errorf("anonymous volume %+v", anon)
	}
	n := 0
	for _, v := range pod.Spec.Volumes {
		if v.Name == jm.Name && v.EmptyDir != nil {
			n++
		}
	}
	if n != 1 {
		t.Errorf("volume %s appears %d times as an emptyDir", jm.Name, n)
	}
}

func TestUserVolumesRefused(t *testing.T) {
	for _, tc := range []struct {
		m    hookapi.Mount
		want string
	}{
		{hookapi.Mount{UserProvidedValue: "/data:/data", SourceVolumePath: "/data", TargetVolumePath: "/data"}, EnvHookTemplate},
		{hookapi.Mount{SourceVolumePath: "v", TargetVolumePath: "rel"}, "not an absolute path"},
		{hookapi.Mount{SourceVolumePath: "v", TargetVolumePath: "/tether/x"}, "/tether"},
	} {
		args := &PrepareJobArgs{Container: &Container{Image: "b", UserMountVolumes: []hookapi.Mount{tc.m}}}
		if _, _, err := shapedPod(t, args, ""); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.m, err, tc.want)
		}
	}
}

func TestNamedVolumeNames(t *testing.T) {
	a, b := namedVolume("My_Vol"), namedVolume("my-vol")
	if a == b || !strings.HasPrefix(a, userVolumePrefix+"my-vol-") {
		t.Errorf("names %q and %q: want distinct DNS labels", a, b)
	}
}

// The workflow's options win over the settings (TETHER_ACTIONS_CONFIG):
// a lower memory limit lowers the settings' request with it.
func TestCreateOptionsOverSettings(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(cfg, []byte("memory: 2Gi\ncpu: 500m\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := SettingsFromEnv(func(k string) string { return map[string]string{EnvConfig: cfg}[k] })
	if err != nil {
		t.Fatal(err)
	}
	args := &PrepareJobArgs{Container: &Container{Image: "b", CreateOptions: "--memory 512m"}}
	shape, err := planShape(args, "", func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := jobSpec(s, args, "ns", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := shape.shapeSpec(&spec); err != nil {
		t.Fatal(err)
	}
	objs, err := kube.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := shapeObjects(shape, objs, nil, func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	r := objs.Pod.Spec.Containers[0].Resources
	if r.Limits.Memory().String() != "512Mi" || r.Requests.Memory().String() != "512Mi" || r.Limits.Cpu().String() != "500m" || r.Requests.Cpu().String() != "500m" {
		t.Errorf("resources %+v: want the option's memory (limit and the request it lowers) and the settings' cpu", r)
	}
}
