package kube

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func testSpec() Spec {
	return Spec{
		Namespace: "ci",
		Image:     "localhost/tether/busybox:dev",
		Scripts: []Script{
			{Name: "build.sh", Content: []byte("echo build\n")},
			{Name: "../weird name!.sh", Content: []byte("echo weird\n")},
		},
		After:       []Script{{Name: "build.sh", Content: []byte("echo after\n")}},
		Env:         map[string]string{"TOKEN": "s3cret", "my.var-1": "x"},
		Timeout:     10 * time.Minute,
		IdleTimeout: 5 * time.Minute,
	}
}

func TestBuildPodLayout(t *testing.T) {
	objs, err := Build(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	pod := objs.Pod
	if !strings.HasPrefix(pod.Name, "tether-") || pod.Namespace != "ci" {
		t.Fatalf("pod %s/%s", pod.Namespace, pod.Name)
	}
	for what, labels := range map[string]map[string]string{
		"pod": pod.Labels, "configmap": objs.ConfigMap.Labels, "secret": objs.Secret.Labels,
	} {
		if labels[LabelManagedBy] != "tether" || labels[LabelJob] != objs.Job.ID || objs.Job.ID == "" {
			t.Errorf("%s labels %v; want managed-by=tether and job=%s", what, labels, objs.Job.ID)
		}
	}
	if got := pod.Annotations[AnnotationTTL]; got != "1500" { // 10m + 15m
		t.Errorf("TTL annotation %q, want 1500", got)
	}
	if ads := pod.Spec.ActiveDeadlineSeconds; ads == nil || *ads != 600+120+10+300 {
		t.Errorf("activeDeadlineSeconds %v, want 1030 (timeout + margin + grace + after-scripts budget)", ads)
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %s", pod.Spec.RestartPolicy)
	}
	if len(pod.Spec.InitContainers) != 1 {
		t.Fatalf("%d init containers", len(pod.Spec.InitContainers))
	}
	ic := pod.Spec.InitContainers[0]
	if ic.Image != DefaultHelperImage() || strings.Join(ic.Command, " ") != "/tether-shim copy /mnt/tether/bin/tether-shim" {
		t.Errorf("init container %s %v", ic.Image, ic.Command)
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	if c.Name != BuildContainer || c.Image != "localhost/tether/busybox:dev" || !c.Stdin || c.StdinOnce || c.TTY {
		t.Errorf("build container %s %s stdin=%v stdinOnce=%v tty=%v", c.Name, c.Image, c.Stdin, c.StdinOnce, c.TTY)
	}
	if strings.Join(c.Command, " ") != ShimPath {
		t.Errorf("command %v", c.Command)
	}
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"--spool-dir=/tether/spool", "--deadline=600", "--ttl-file=/tether/podinfo/annotations", "--idle-timeout=5m0s"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %s", args, want)
		}
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != objs.Secret.Name {
		t.Errorf("envFrom %+v; want the Secret %s", c.EnvFrom, objs.Secret.Name)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v
	}
	if mounts["tether"] != "/tether" || vols["tether"].EmptyDir == nil {
		t.Errorf("tether emptyDir: mounts %v", mounts)
	}
	if mounts["scripts"] != ScriptsDir || vols["scripts"].ConfigMap == nil || vols["scripts"].ConfigMap.Name != objs.ConfigMap.Name ||
		*vols["scripts"].ConfigMap.DefaultMode != 0o755 {
		t.Errorf("scripts volume %+v mounted at %q", vols["scripts"], mounts["scripts"])
	}
	if dv := vols["podinfo"].DownwardAPI; mounts["podinfo"] != PodInfoDir || dv == nil || dv.Items[0].FieldRef.FieldPath != "metadata.annotations" {
		t.Errorf("podinfo volume %+v mounted at %q", vols["podinfo"], mounts["podinfo"])
	}

	// Scripts: unique keys, paths under ScriptsDir, content kept.
	if len(objs.Job.Scripts) != 2 || len(objs.Job.After) != 1 {
		t.Fatalf("job %+v", objs.Job)
	}
	seen := map[string]bool{}
	for i, p := range append(append([]string{}, objs.Job.Scripts...), objs.Job.After...) {
		key, ok := strings.CutPrefix(p, ScriptsDir+"/")
		if !ok || seen[key] {
			t.Fatalf("script %d path %q: not a unique path under %s", i, p, ScriptsDir)
		}
		seen[key] = true
		want := []string{"echo build\n", "echo weird\n", "echo after\n"}[i]
		if objs.ConfigMap.Data[key] != want {
			t.Errorf("ConfigMap[%s] = %q, want %q", key, objs.ConfigMap.Data[key], want)
		}
	}
	if string(objs.Secret.Data["TOKEN"]) != "s3cret" || string(objs.Secret.Data["my.var-1"]) != "x" {
		t.Errorf("secret data %v", objs.Secret.Data)
	}
}

func TestBuildNoTimeoutNoEnv(t *testing.T) {
	s := testSpec()
	s.Timeout, s.Env = 0, nil
	objs, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	if objs.Secret != nil || len(objs.Pod.Spec.Containers[0].EnvFrom) != 0 {
		t.Error("a Secret without variables")
	}
	if objs.Pod.Spec.ActiveDeadlineSeconds != nil {
		t.Error("activeDeadlineSeconds without a timeout")
	}
	if strings.Contains(strings.Join(objs.Pod.Spec.Containers[0].Args, " "), "--deadline") {
		t.Error("--deadline without a timeout")
	}
	if objs.Pod.Annotations[AnnotationTTL] != "86400" {
		t.Errorf("TTL %s, want the 24h default", objs.Pod.Annotations[AnnotationTTL])
	}
}

func TestBuildBinaryScript(t *testing.T) {
	s := testSpec()
	s.Scripts = []Script{{Name: "bin.sh", Content: []byte("echo \xff\xfe\n")}}
	objs, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimPrefix(objs.Job.Scripts[0], ScriptsDir+"/")
	if !bytes.Equal(objs.ConfigMap.BinaryData[key], []byte("echo \xff\xfe\n")) {
		t.Fatalf("binary script not kept in BinaryData: %v", objs.ConfigMap)
	}
}

func TestBuildRejects(t *testing.T) {
	for name, mutate := range map[string]func(*Spec){
		"scripts over 1 MiB": func(s *Spec) {
			s.Scripts = []Script{{Name: "a", Content: bytes.Repeat([]byte("x"), 600<<10)}, {Name: "b", Content: bytes.Repeat([]byte("y"), 500<<10)}}
		},
		"variables over 1 MiB": func(s *Spec) { s.Env = map[string]string{"BIG": strings.Repeat("x", 1<<20+1)} },
		"bad variable name":    func(s *Spec) { s.Env = map[string]string{"1NOPE=": "x"} },
		"shim's variable":      func(s *Spec) { s.Env = map[string]string{"TETHER_COMMANDS": "/tmp/fifo"} },
		"no image":             func(s *Spec) { s.Image = "" },
		"no namespace":         func(s *Spec) { s.Namespace = "" },
		"no scripts":           func(s *Spec) { s.Scripts, s.After = nil, nil },
		"bad pod name":         func(s *Spec) { s.Name = "Not_A_Name" },
	} {
		s := testSpec()
		mutate(&s)
		if _, err := Build(s); err == nil {
			t.Errorf("%s: Build succeeded", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// The after-scripts' budget after a deadline reaches the shim and widens the
// pod's activeDeadlineSeconds, so Kubernetes does not end the pod while the
// after-scripts still run; a negative budget turns them off.
func TestBuildAfterTimeout(t *testing.T) {
	for _, tc := range []struct {
		after   time.Duration
		arg     string
		seconds int64
	}{
		{30 * time.Second, "--after-timeout=30s", 600 + 120 + 10 + 30},
		{-1, "--after-timeout=0s", 600 + 120 + 10},
	} {
		spec := testSpec()
		spec.AfterTimeout = tc.after
		objs, err := Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		if ads := objs.Pod.Spec.ActiveDeadlineSeconds; ads == nil || *ads != tc.seconds {
			t.Errorf("AfterTimeout %v: activeDeadlineSeconds %v, want %d", tc.after, ads, tc.seconds)
		}
		if args := objs.Pod.Spec.Containers[0].Args; !slices.Contains(args, tc.arg) {
			t.Errorf("AfterTimeout %v: shim args %v lack %s", tc.after, args, tc.arg)
		}
	}
}
