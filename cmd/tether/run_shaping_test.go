package main

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tether-ci/tether/client/kube"
)

func TestShapingFlagsParse(t *testing.T) {
	f := shapingFlags{
		resourceFlags:    resourceFlags{CPU: "500m", Memory: "256Mi", Limits: "cpu=1"},
		NodeSelector:     stringList{"pool=gpu"},
		Tolerations:      stringList{"gpu=true:NoSchedule", "arm64", "dedicated:NoExecute"},
		PullSecrets:      stringList{"regcred"},
		ServiceAccount:   "ci",
		Services:         stringList{"postgres:16=db,database", "redis"},
		Volumes:          stringList{"pvc:cache:/cache", "hostpath:/srv/data:/data:ro", "emptydir-memory:/scratch", "configmap:cfg:/etc/cfg", "secret:tls:/tls:ro"},
		Labels:           stringList{"team=a"},
		Annotations:      stringList{"note=x=y"},
		ServiceResources: resourceFlags{prefix: "service-", Memory: "64Mi"},
		ShimFrom:         "image",
	}
	var spec kube.Spec
	if err := f.apply(&spec); err != nil {
		t.Fatal(err)
	}
	if spec.ShimFrom != kube.ShimFromImage || !f.any() {
		t.Errorf("ShimFrom %q, any %v; want %q, true", spec.ShimFrom, f.any(), kube.ShimFromImage)
	}
	r := spec.Resources
	if r.Requests.Cpu().String() != "500m" || r.Limits.Cpu().String() != "1" || r.Requests.Memory().String() != "256Mi" || r.Limits.Memory().String() != "256Mi" {
		t.Errorf("resources %+v", r)
	}
	if spec.NodeSelector["pool"] != "gpu" || spec.Labels["team"] != "a" || spec.Annotations["note"] != "x=y" || spec.ServiceAccountName != "ci" {
		t.Errorf("selector %v labels %v annotations %v sa %q", spec.NodeSelector, spec.Labels, spec.Annotations, spec.ServiceAccountName)
	}
	want := []corev1.Toleration{
		{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule},
		{Key: "arm64", Operator: corev1.TolerationOpExists},
		{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	}
	for i, w := range want {
		if spec.Tolerations[i] != w {
			t.Errorf("toleration %d: %+v, want %+v", i, spec.Tolerations[i], w)
		}
	}
	if len(spec.Services) != 2 || spec.Services[0].Image != "postgres:16" || strings.Join(spec.Services[0].Aliases, ",") != "db,database" || spec.Services[1].Aliases != nil {
		t.Errorf("services %+v", spec.Services)
	}
	for _, svc := range spec.Services {
		if svc.Resources.Limits.Memory().String() != "64Mi" || svc.Resources.Requests.Memory().String() != "64Mi" {
			t.Errorf("service %s resources %+v, want --service-memory's", svc.Image, svc.Resources)
		}
	}
	if len(spec.Volumes) != 5 || spec.Volumes[0].PersistentVolumeClaim.ClaimName != "cache" || spec.Volumes[1].HostPath.Path != "/srv/data" ||
		spec.Volumes[2].EmptyDir.Medium != corev1.StorageMediumMemory || spec.Volumes[3].ConfigMap.Name != "cfg" || spec.Volumes[4].Secret.SecretName != "tls" {
		t.Errorf("volumes %+v", spec.Volumes)
	}
	if m := spec.VolumeMounts[1]; m.MountPath != "/data" || !m.ReadOnly || spec.VolumeMounts[0].ReadOnly {
		t.Errorf("mounts %+v", spec.VolumeMounts)
	}
	if spec.ImagePullSecrets[0] != "regcred" {
		t.Errorf("pull secrets %v", spec.ImagePullSecrets)
	}
}

func TestShapingFlagsErrors(t *testing.T) {
	for _, tc := range []struct {
		f    shapingFlags
		want string
	}{
		{shapingFlags{resourceFlags: resourceFlags{CPU: "lots"}}, `--cpu "lots" is not a quantity`},
		{shapingFlags{resourceFlags: resourceFlags{Memory: "1Q"}}, `--memory "1Q" is not a quantity`},
		{shapingFlags{resourceFlags: resourceFlags{Requests: "cpu"}}, `--requests "cpu": want NAME=QUANTITY`},
		{shapingFlags{resourceFlags: resourceFlags{Limits: "memory=x"}}, `--limits: memory="x" is not a quantity`},
		{shapingFlags{resourceFlags: resourceFlags{CPU: "2", Limits: "cpu=1"}}, "the cpu request 2 is more than its limit 1"},
		{shapingFlags{NodeSelector: stringList{"pool"}}, `--node-selector "pool": want KEY=VALUE`},
		{shapingFlags{Tolerations: stringList{"k:Sometimes"}}, `effect "Sometimes" is not NoSchedule`},
		{shapingFlags{Tolerations: stringList{"=v"}}, "want KEY[=VALUE][:EFFECT]"},
		{shapingFlags{Services: stringList{"=db"}}, "want IMAGE[=ALIAS"},
		{shapingFlags{Volumes: stringList{"nfs:server:/x"}}, "a kind of pvc, hostpath"},
		{shapingFlags{Volumes: stringList{"pvc:/x"}}, "pvc:SOURCE:PATH"},
		{shapingFlags{Volumes: stringList{"hostpath:rel:/x"}}, "ABSOLUTE"},
		{shapingFlags{Volumes: stringList{"emptydir:rel"}}, "must be absolute"},
		{shapingFlags{Labels: stringList{"=x"}}, `--label "=x"`},
		{shapingFlags{ScheduleTimeout: -time.Second}, "--schedule-timeout -1s must not be negative"},
		{shapingFlags{ShimFrom: "volume"}, `--shim-from "volume": want init or image`},
		{shapingFlags{NodeSelector: stringList{"bad key!=x"}}, `--node-selector "bad key!=x": key "bad key!"`},
		{shapingFlags{NodeSelector: stringList{"pool=not a value"}}, `--node-selector "pool=not a value": value "not a value" of pool`},
		{shapingFlags{Labels: stringList{"team=-x-"}}, `--label "team=-x-": value "-x-"`},
		{shapingFlags{Annotations: stringList{"bad key=anything goes"}}, `--annotation "bad key=anything goes": key "bad key"`},
		{shapingFlags{Tolerations: stringList{"bad key:NoSchedule"}}, `--toleration "bad key:NoSchedule": key "bad key"`},
		{shapingFlags{Tolerations: stringList{"gpu=not a value"}}, `--toleration "gpu=not a value": key "gpu": value "not a value"`},
		{shapingFlags{PullSecrets: stringList{"Reg_Cred"}}, `--pull-secret "Reg_Cred" is not a Kubernetes object name`},
		{shapingFlags{ServiceAccount: "CI Runner"}, `--service-account "CI Runner" is not a Kubernetes object name`},
		{shapingFlags{Services: stringList{"redis=cache,Bad_Alias"}}, `--service "redis=cache,Bad_Alias": alias "Bad_Alias" is not a host name`},
		{shapingFlags{Volumes: stringList{"pvc:Cache_1:/cache"}}, `--volume pvc:Cache_1:/cache: pvc "Cache_1" is not a Kubernetes object name`},
		{shapingFlags{Volumes: stringList{"configmap:my cfg:/etc/cfg"}}, `configmap "my cfg" is not a Kubernetes object name`},
		{shapingFlags{Volumes: stringList{"secret:TLS:/tls:ro"}}, `secret "TLS" is not a Kubernetes object name`},
		{shapingFlags{Volumes: stringList{"emptydir:/a:/b"}}, "emptydir:PATH[:ro]"},
		{shapingFlags{Services: stringList{"redis"}, ServiceResources: resourceFlags{prefix: "service-", Requests: "memory"}}, `--service-requests "memory": want NAME=QUANTITY`},
		{shapingFlags{Services: stringList{"redis"}, ServiceResources: resourceFlags{prefix: "service-", Memory: "2Gi", Limits: "memory=1Gi"}}, "more than its limit 1Gi (--service-cpu/--service-memory"},
	} {
		err := tc.f.apply(&kube.Spec{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.f, err, tc.want)
		}
	}
}

// A pod-shaping flag with a backend that makes no pod is bad input.
func TestShapingFlagsNeedKubernetes(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "job.sh", "echo hi\n")
	_, stderr, code := tether(t, dir, "run", "--local", "--memory", "64Mi", "job.sh")
	if code != 2 || !strings.Contains(string(stderr), "apply to Kubernetes pods only") {
		t.Fatalf("exit %d stderr %s", code, stderr)
	}
	_, stderr, code = tether(t, dir, "run", "--image", "busybox", "--cpu", "lots", "job.sh")
	if code != 2 || !strings.Contains(string(stderr), `--cpu "lots"`) {
		t.Fatalf("exit %d stderr %s", code, stderr)
	}
}
