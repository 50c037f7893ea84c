package settings

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tether-ci/tether/client/kube"
)

func TestShapingFlagsParse(t *testing.T) {
	f := Pod{
		Resources:        Resources{CPU: "500m", Memory: "256Mi", Limits: "cpu=1"},
		NodeSelector:     StringList{"pool=gpu"},
		Tolerations:      StringList{"gpu=true:NoSchedule", "arm64", "dedicated:NoExecute"},
		PullSecrets:      StringList{"regcred"},
		ServiceAccount:   "ci",
		Services:         StringList{"postgres:16=db,database", "redis"},
		Volumes:          StringList{"pvc:cache:/cache", "hostpath:/srv/data:/data:ro", "emptydir-memory:/scratch", "configmap:cfg:/etc/cfg", "secret:tls:/tls:ro"},
		Labels:           StringList{"team=a"},
		Annotations:      StringList{"note=x=y"},
		ServiceResources: Resources{prefix: "service-", Memory: "64Mi"},
		ShimFrom:         "image",
	}
	var spec kube.Spec
	if err := f.ApplyTo(&spec); err != nil {
		t.Fatal(err)
	}
	if spec.ShimFrom != kube.ShimFromImage || !f.IsSet() {
		t.Errorf("ShimFrom %q, any %v; want %q, true", spec.ShimFrom, f.IsSet(), kube.ShimFromImage)
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
		f    Pod
		want string
	}{
		{Pod{Resources: Resources{CPU: "lots"}}, `--cpu "lots" is not a quantity`},
		{Pod{Resources: Resources{Memory: "1Q"}}, `--memory "1Q" is not a quantity`},
		{Pod{Resources: Resources{Requests: "cpu"}}, `--requests "cpu": want NAME=QUANTITY`},
		{Pod{Resources: Resources{Limits: "memory=x"}}, `--limits: memory="x" is not a quantity`},
		{Pod{Resources: Resources{CPU: "2", Limits: "cpu=1"}}, "the cpu request 2 is more than its limit 1"},
		{Pod{NodeSelector: StringList{"pool"}}, `--node-selector "pool": want KEY=VALUE`},
		{Pod{Tolerations: StringList{"k:Sometimes"}}, `effect "Sometimes" is not NoSchedule`},
		{Pod{Tolerations: StringList{"=v"}}, "want KEY[=VALUE][:EFFECT]"},
		{Pod{Services: StringList{"=db"}}, "want IMAGE[=ALIAS"},
		{Pod{Volumes: StringList{"nfs:server:/x"}}, "a kind of pvc, hostpath"},
		{Pod{Volumes: StringList{"pvc:/x"}}, "pvc:SOURCE:PATH"},
		{Pod{Volumes: StringList{"hostpath:rel:/x"}}, "ABSOLUTE"},
		{Pod{Volumes: StringList{"emptydir:rel"}}, "must be absolute"},
		{Pod{Labels: StringList{"=x"}}, `--label "=x"`},
		{Pod{ScheduleTimeout: -time.Second}, "--schedule-timeout -1s must not be negative"},
		{Pod{ShimFrom: "volume"}, `--shim-from "volume": want init or image`},
		{Pod{NodeSelector: StringList{"bad key!=x"}}, `--node-selector "bad key!=x": key "bad key!"`},
		{Pod{NodeSelector: StringList{"pool=not a value"}}, `--node-selector "pool=not a value": value "not a value" of pool`},
		{Pod{Labels: StringList{"team=-x-"}}, `--label "team=-x-": value "-x-"`},
		{Pod{Annotations: StringList{"bad key=anything goes"}}, `--annotation "bad key=anything goes": key "bad key"`},
		{Pod{Tolerations: StringList{"bad key:NoSchedule"}}, `--toleration "bad key:NoSchedule": key "bad key"`},
		{Pod{Tolerations: StringList{"gpu=not a value"}}, `--toleration "gpu=not a value": key "gpu": value "not a value"`},
		{Pod{PullSecrets: StringList{"Reg_Cred"}}, `--pull-secret "Reg_Cred" is not a Kubernetes object name`},
		{Pod{ServiceAccount: "CI Runner"}, `--service-account "CI Runner" is not a Kubernetes object name`},
		{Pod{Services: StringList{"redis=cache,Bad_Alias"}}, `--service "redis=cache,Bad_Alias": alias "Bad_Alias" is not a host name`},
		{Pod{Volumes: StringList{"pvc:Cache_1:/cache"}}, `--volume pvc:Cache_1:/cache: pvc "Cache_1" is not a Kubernetes object name`},
		{Pod{Volumes: StringList{"configmap:my cfg:/etc/cfg"}}, `configmap "my cfg" is not a Kubernetes object name`},
		{Pod{Volumes: StringList{"secret:TLS:/tls:ro"}}, `secret "TLS" is not a Kubernetes object name`},
		{Pod{Volumes: StringList{"emptydir:/a:/b"}}, "emptydir:PATH[:ro]"},
		{Pod{Services: StringList{"redis"}, ServiceResources: Resources{prefix: "service-", Requests: "memory"}}, `--service-requests "memory": want NAME=QUANTITY`},
		{Pod{Services: StringList{"redis"}, ServiceResources: Resources{prefix: "service-", Memory: "2Gi", Limits: "memory=1Gi"}}, "more than its limit 1Gi (--service-cpu/--service-memory"},
	} {
		err := tc.f.ApplyTo(&kube.Spec{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.f, err, tc.want)
		}
	}
}
