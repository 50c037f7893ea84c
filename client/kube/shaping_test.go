package kube

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestBuildWithEveryShapingField(t *testing.T) {
	spec := testSpec()
	res := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
	spec.Resources = res
	spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
	spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}}}},
	}}}
	spec.ImagePullSecrets = []string{"regcred"}
	spec.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}}
	spec.VolumeMounts = []corev1.VolumeMount{{Name: "cache", MountPath: "/cache"}}
	spec.PriorityClassName = "ci-high"
	spec.RuntimeClassName = "gvisor"
	spec.DNSPolicy = corev1.DNSNone
	spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.10"}}
	spec.HostAliases = []corev1.HostAlias{{IP: "10.1.1.1", Hostnames: []string{"git.example"}}}
	spec.Services = []Service{{Image: "registry.example/library/postgres:16", Aliases: []string{"db"}, Env: map[string]string{"POSTGRES_PASSWORD": "pw"}, Args: []string{"-c", "fsync=off"}, Resources: res}}
	spec.InitResources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Mi")}}
	spec.ServiceAccountName = "ci-runner"
	spec.NodeSelector = map[string]string{"pool": "gpu"}
	spec.Labels = map[string]string{"team": "infra", LabelManagedBy: "someone-else"}
	spec.Annotations = map[string]string{"note": "x", AnnotationTTL: "1"}
	spec.TerminationGracePeriod = 7 * time.Second
	spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "ci", Effect: corev1.TaintEffectNoSchedule})
	spec.Services = append(spec.Services, Service{Name: "cache", Image: "redis:7", Command: []string{"redis-server"}, Args: []string{"--save", ""}})
	objs, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	ps := objs.Pod.Spec
	build, init := ps.Containers[0], ps.InitContainers[0]
	if !build.Resources.Requests.Cpu().Equal(resource.MustParse("250m")) || !init.Resources.Limits.Memory().Equal(resource.MustParse("16Mi")) || init.Resources.Requests != nil {
		t.Errorf("build resources %+v, init resources %+v (want InitResources')", build.Resources, init.Resources)
	}
	if ps.ServiceAccountName != "ci-runner" || ps.NodeSelector["pool"] != "gpu" || ps.TerminationGracePeriodSeconds == nil || *ps.TerminationGracePeriodSeconds != 7 {
		t.Errorf("service account %q node selector %v grace %v", ps.ServiceAccountName, ps.NodeSelector, ps.TerminationGracePeriodSeconds)
	}
	meta := objs.Pod.ObjectMeta
	if meta.Labels["team"] != "infra" || meta.Labels[LabelManagedBy] != ManagedByValue || meta.Annotations["note"] != "x" || meta.Annotations[AnnotationTTL] == "1" {
		t.Errorf("labels %v annotations %v; want the caller's added and Tether's own kept", meta.Labels, meta.Annotations)
	}
	if len(ps.Tolerations) != 2 || ps.Tolerations[1].Value != "ci" || ps.Affinity == nil || ps.ImagePullSecrets[0].Name != "regcred" || ps.PriorityClassName != "ci-high" ||
		ps.RuntimeClassName == nil || *ps.RuntimeClassName != "gvisor" || ps.DNSPolicy != corev1.DNSNone || ps.DNSConfig.Nameservers[0] != "10.0.0.10" {
		t.Errorf("pod spec %+v", ps)
	}
	if m := build.VolumeMounts[len(build.VolumeMounts)-1]; m.Name != "cache" || m.MountPath != "/cache" {
		t.Errorf("build mounts %+v", build.VolumeMounts)
	}
	if ps.Volumes[len(ps.Volumes)-1].Name != "cache" {
		t.Errorf("volumes %+v", ps.Volumes)
	}
	if len(ps.InitContainers) != 3 {
		t.Fatalf("init containers %d, want the shim copy and two services", len(ps.InitContainers))
	}
	if c := ps.InitContainers[2]; c.Name != "cache" || c.Command[0] != "redis-server" || c.Args[0] != "--save" || c.Resources.Limits != nil {
		t.Errorf("second service container %+v", c)
	}
	svc := ps.InitContainers[1]
	if svc.Name != "svc-0-postgres" || svc.Image != "registry.example/library/postgres:16" || svc.RestartPolicy == nil ||
		*svc.RestartPolicy != corev1.ContainerRestartPolicyAlways || svc.Env[0].Name != "POSTGRES_PASSWORD" || svc.Args[1] != "fsync=off" {
		t.Errorf("service container %+v", svc)
	}
	if len(ps.HostAliases) != 2 || ps.HostAliases[1].IP != "127.0.0.1" || ps.HostAliases[1].Hostnames[0] != "db" {
		t.Errorf("host aliases %+v", ps.HostAliases)
	}
	// The shim's own layout is untouched.
	if build.Command[0] != ShimPath || !build.Stdin || build.StdinOnce {
		t.Errorf("build container %+v", build)
	}
}

func TestBuildShapingErrors(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Spec)
		want string
	}{
		{func(s *Spec) { s.Volumes = []corev1.Volume{{Name: "tether"}} }, "one of Tether's own volumes"},
		{func(s *Spec) {
			s.Volumes = []corev1.Volume{{Name: "v"}}
			s.VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/tether/x"}}
		}, "would cover /tether"},
		{func(s *Spec) {
			s.Volumes = []corev1.Volume{{Name: "v"}}
			s.VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/"}}
		}, "would cover /tether"},
		{func(s *Spec) { s.VolumeMounts = []corev1.VolumeMount{{Name: "nope", MountPath: "/x"}} }, "names no volume"},
		{func(s *Spec) { s.Services = []Service{{Name: "svc"}} }, "has no image"},
		{func(s *Spec) { s.Services = []Service{{Name: "build", Image: "x"}} }, "used twice"},
		{func(s *Spec) { s.Services = []Service{{Image: "x", Aliases: []string{"Not_A_Host"}}} }, `alias "Not_A_Host"`},
		{func(s *Spec) { s.ImagePullSecrets = []string{"Bad Name"} }, "image pull secret"},
		{func(s *Spec) { s.ServiceAccountName = "CI Runner" }, `Spec.ServiceAccountName "CI Runner"`},
		{func(s *Spec) { s.NodeSelector = map[string]string{"bad key": "x"} }, `Spec.NodeSelector: key "bad key"`},
		{func(s *Spec) { s.Labels = map[string]string{"team": "not a value"} }, `Spec.Labels: value "not a value" of team`},
		{func(s *Spec) { s.Annotations = map[string]string{"/x": "y"} }, `Spec.Annotations: key "/x"`},
		{func(s *Spec) {
			s.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists, Value: "yes"}}
		}, `Spec.Tolerations[0]: key "gpu": operator Exists takes no value`},
		{func(s *Spec) { s.Tolerations = []corev1.Toleration{{Value: "x"}} }, "Spec.Tolerations[0]: an empty key needs operator Exists"},
		{func(s *Spec) { s.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: "In"}} }, `operator "In" is not Exists or Equal`},
		{func(s *Spec) {
			s.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: "Sometimes"}}
		}, `effect "Sometimes" is not NoSchedule`},
	} {
		spec := testSpec()
		tc.edit(&spec)
		_, err := Build(spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one containing %q", err, tc.want)
		}
	}
}
