package kube

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestServiceStartupProbe(t *testing.T) {
	spec := testSpec()
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "pg_isready"}}}, PeriodSeconds: 2, FailureThreshold: 5}
	spec.Services = []Service{{Image: "postgres:16", StartupProbe: probe}, {Image: "redis:7"}}
	objs, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	pg, redis := container(objs.Pod.Spec.InitContainers, "svc-0-postgres"), container(objs.Pod.Spec.InitContainers, "svc-1-redis")
	if pg == nil || redis == nil {
		t.Fatalf("init containers %v", names(objs.Pod.Spec.InitContainers))
	}
	if pg.StartupProbe == nil || !slices.Equal(pg.StartupProbe.Exec.Command, probe.Exec.Command) || pg.StartupProbe.PeriodSeconds != 2 || pg.StartupProbe.FailureThreshold != 5 {
		t.Errorf("postgres startup probe %+v, want %+v", pg.StartupProbe, probe)
	}
	if pg.StartupProbe == probe {
		t.Error("the probe is the caller's pointer; want a copy")
	}
	if redis.StartupProbe != nil {
		t.Errorf("redis has a startup probe %+v; want none", redis.StartupProbe)
	}
}

func TestCheckInvariantsExported(t *testing.T) {
	objs, err := Build(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	after := objs.Pod.DeepCopy()
	after.Labels["extra"] = "ok"
	if err := CheckInvariants(objs.Pod, after); err != nil {
		t.Errorf("an added label: %v", err)
	}
	after.Spec.Containers[0].Args = nil
	if err := CheckInvariants(objs.Pod, after); err == nil {
		t.Error("removed shim args: no error")
	}
}
