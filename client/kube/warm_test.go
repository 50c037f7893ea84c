package kube

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func poolSpec() Spec {
	return Spec{Namespace: "ci", Image: "localhost/tether/busybox:dev"}
}

// A job's settings hash like its pool's exactly when only job data
// differs; every pod-shaping field changes the hash.
func TestPoolHash(t *testing.T) {
	base, err := PoolHash(poolSpec())
	if err != nil {
		t.Fatal(err)
	}
	if len(base) != 16 {
		t.Fatalf("hash %q: want 16 hex digits", base)
	}
	job := testSpec() // scripts, env, timeout, idle timeout: job data only
	job.Name, job.TTL, job.AfterTimeout = "tether-job-1", time.Hour, -1
	job.MaskEnv = []string{"TOKEN"}
	job.Env["TOKEN"] = "s3cret-value"
	job.Labels, job.Annotations = map[string]string{"team": "a"}, map[string]string{"note": "x"}
	if got, err := PoolHash(job); err != nil || got != base {
		t.Fatalf("job spec hash = %q, %v; want the pool's %q", got, err, base)
	}
	shaping := map[string]func(*Spec){
		"image":     func(s *Spec) { s.Image = "alpine:3" },
		"helper":    func(s *Spec) { s.HelperImage = "example.com/shim:1" },
		"namespace": func(s *Spec) { s.Namespace = "other" },
		"tty":       func(s *Spec) { s.TTY = true },
		"cpu": func(s *Spec) {
			s.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}
		},
		"node selector":   func(s *Spec) { s.NodeSelector = map[string]string{"disk": "ssd"} },
		"service account": func(s *Spec) { s.ServiceAccountName = "builder" },
		"services":        func(s *Spec) { s.Services = []Service{{Image: "redis:7"}} },
		"restricted":      func(s *Spec) { s.Restricted = true },
		"pull secret":     func(s *Spec) { s.ImagePullSecrets = []string{"regcred"} },
		"shim args":       func(s *Spec) { s.ShimArgs = []string{"--kill-leftovers"} },
	}
	seen := map[string]string{base: "base"}
	for name, change := range shaping {
		s := poolSpec()
		change(&s)
		h, err := PoolHash(s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if other, dup := seen[h]; dup {
			t.Errorf("%s hashes like %s (%s)", name, other, h)
		}
		seen[h] = name
	}
}

// The hash of settings with maps (node selector, resources) is the same
// whatever order Go iterates the maps in: the claimer's and the
// controller's hashes of one pool agree.
func TestPoolHashDeterministic(t *testing.T) {
	s := poolSpec()
	s.NodeSelector = map[string]string{}
	for i := range 32 {
		s.NodeSelector[fmt.Sprintf("key-%d", i)] = fmt.Sprint(i)
	}
	s.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Gi"), "example.com/gpu": resource.MustParse("1")}
	want, err := PoolHash(s)
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		c := s
		c.NodeSelector = maps.Clone(s.NodeSelector)
		c.Resources.Requests = maps.Clone(s.Resources.Requests)
		if got, err := PoolHash(c); err != nil || got != want {
			t.Fatalf("hash %s, %v; then %s: it depends on the maps' order", want, err, got)
		}
	}
}

func TestWarmPod(t *testing.T) {
	spec := poolSpec()
	objs, err := WarmPod(spec, WarmOptions{Pool: "small", MaxIdle: 20 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	pod := objs.Pod
	hash, _ := PoolHash(spec)
	for k, want := range map[string]string{LabelPool: "small", LabelPoolHash: hash, LabelWarm: WarmStarting, LabelManagedBy: ManagedByValue} {
		if pod.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, pod.Labels[k], want)
		}
	}
	if !strings.HasPrefix(pod.Name, "tether-warm-small-") {
		t.Errorf("name %q", pod.Name)
	}
	if objs.ConfigMap != nil || objs.Secret != nil {
		t.Errorf("a warm pod has no ConfigMap or Secret: %v %v", objs.ConfigMap, objs.Secret)
	}
	if pod.Spec.ActiveDeadlineSeconds != nil {
		t.Errorf("a warm pod has no deadline before its claim: %d", *pod.Spec.ActiveDeadlineSeconds)
	}
	args := strings.Join(pod.Spec.Containers[0].Args, " ")
	if !strings.Contains(args, "--idle-timeout=20m0s") || strings.Contains(args, "--deadline") {
		t.Errorf("shim args %q: want the pool's max-idle as idle timeout and no deadline", args)
	}
	if got, want := pod.Annotations[AnnotationTTL], "1500"; got != want {
		t.Errorf("TTL annotation %q, want %q (max-idle + WarmTTLMargin)", got, want)
	}
	for _, bad := range []func(*Spec){
		func(s *Spec) { s.Env = map[string]string{"TOKEN": "secret-value"} },
		func(s *Spec) { s.Scripts = []Script{{Name: "a.sh", Content: []byte("true")}} },
		func(s *Spec) { s.Timeout = time.Minute },
		func(s *Spec) { s.JobID = "job-1" },
	} {
		s := poolSpec()
		bad(&s)
		if _, err := WarmPod(s, WarmOptions{Pool: "small", MaxIdle: time.Minute}); err == nil || !strings.Contains(err.Error(), "no job data") {
			t.Errorf("WarmPod with job data: err %v, want a refusal", err)
		}
	}
	for _, o := range []WarmOptions{{Pool: "", MaxIdle: time.Minute}, {Pool: "Bad_Name", MaxIdle: time.Minute}, {Pool: "ok"}} {
		if _, err := WarmPod(poolSpec(), o); err == nil {
			t.Errorf("WarmPod(%+v): no error", o)
		}
	}
	b, _ := json.Marshal(objs)
	if strings.Contains(string(b), "envFrom") {
		t.Errorf("warm pod has envFrom: %s", b)
	}
}
