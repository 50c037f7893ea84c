package actions

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	ktesting "k8s.io/client-go/testing"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/actions/hookapi"
)

// prepareJobInput is a prepare_job input for a job container of image, its
// response file in a test directory.
func prepareJobInput(t *testing.T, image string) *hookapi.Input {
	t.Helper()
	args, err := json.Marshal(PrepareJobArgs{Container: &Container{Image: image}})
	if err != nil {
		t.Fatal(err)
	}
	resp := filepath.Join(t.TempDir(), "response.json")
	if err := os.WriteFile(resp, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return &hookapi.Input{Command: hookapi.CommandPrepareJob, ResponseFile: resp, Args: args}
}

// fakeSettings are the settings of a hook whose environment is env.
func fakeSettings(t *testing.T, env map[string]string) Settings {
	t.Helper()
	s, err := SettingsFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// servePodDryRuns answers a pod create with dry run as the API server
// does (it returns the pod and stores nothing); the fake clientset would
// store it.
func servePodDryRuns(cs *fake.Clientset) {
	cs.PrependReactor("create", "pods", func(a ktesting.Action) (bool, runtime.Object, error) {
		c := a.(ktesting.CreateActionImpl)
		return len(c.CreateOptions.DryRun) > 0, c.GetObject(), nil
	})
}

// podsLeft are the names of the pods in namespace ci.
func podsLeft(t *testing.T, cs *fake.Clientset) []string {
	t.Helper()
	l, err := cs.CoreV1().Pods("ci").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range l.Items {
		names = append(names, p.Name)
	}
	return names
}

// A prepare_job whose pull Secret the API server refuses fails, names the
// Secret and the refusal, and deletes the pod it created: nothing is left.
func TestPrepareJobRollsBackWhenThePullSecretIsRefused(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	servePodDryRuns(cs)
	cs.PrependReactor("create", "secrets", func(a ktesting.Action) (bool, runtime.Object, error) {
		if s := a.(ktesting.CreateAction).GetObject().(*corev1.Secret); strings.HasSuffix(s.Name, pullSecretSuffix) {
			return true, nil, apierrors.NewForbidden(corev1.Resource("secrets"), s.Name, nil)
		}
		return false, nil, nil
	})
	h, stderr := fakeHook(cs, nil)
	h.Settings = fakeSettings(t, nil)
	if code := PrepareJob(ctx, h, prepareJobInput(t, "bash:5")); code == 0 {
		t.Fatal("prepare_job succeeded although its pull Secret was refused")
	}
	if !strings.Contains(stderr.String(), "pull Secret") || !strings.Contains(stderr.String(), "forbidden") {
		t.Errorf("stderr %q: want the pull Secret and the refusal named", stderr)
	}
	if left := podsLeft(t, cs); len(left) != 0 {
		t.Errorf("pods left after the failed prepare_job: %v", left)
	}
}

// A prepare_job whose image cannot be pulled fails with the kubelet's
// reason and deletes the pod: the runner's cleanup_job has nothing to do.
func TestPrepareJobRollsBackWhenTheImageCannotBePulled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := fake.NewClientset()
	servePodDryRuns(cs)
	go func() { // the kubelet: every job container waits for its image
		for ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
			l, err := cs.CoreV1().Pods("ci").List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			for _, p := range l.Items {
				p.Status.Phase = corev1.PodPending
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "build", Image: "nosuch:1",
					State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "pull access denied for nosuch"}}}}
				_, _ = cs.CoreV1().Pods("ci").UpdateStatus(ctx, &p, metav1.UpdateOptions{})
			}
		}
	}()
	h, stderr := fakeHook(cs, nil)
	h.Settings = fakeSettings(t, nil)
	if code := PrepareJob(ctx, h, prepareJobInput(t, "nosuch:1")); code == 0 {
		t.Fatal("prepare_job succeeded although its image cannot be pulled")
	}
	if !strings.Contains(stderr.String(), "did not start") || !strings.Contains(stderr.String(), "pull access denied for nosuch") {
		t.Errorf("stderr %q: want the pod that did not start and the kubelet's reason", stderr)
	}
	if left := podsLeft(t, cs); len(left) != 0 {
		t.Errorf("pods left after the failed prepare_job: %v", left)
	}
}

// A container step whose pod changed between its read and the update
// (a conflict) reads the pod again and adds its container once; the
// step Secret of the refused attempt is deleted.
func TestStartContainerStepRetriesAConflict(t *testing.T) {
	ctx := context.Background()
	settings := fakeSettings(t, nil)
	spec, err := jobSpec(settings, &PrepareJobArgs{Container: &Container{Image: "bash:5"}}, "ci", "")
	if err != nil {
		t.Fatal(err)
	}
	spec.Name = "tether-a"
	objs, err := kube.Build(spec) // the job's pod as prepare_job makes it
	if err != nil {
		t.Fatal(err)
	}
	cs := fake.NewClientset(objs.Pod)
	conflicts := 0
	cs.PrependReactor("update", "pods", func(a ktesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "ephemeralcontainers" && conflicts < 2 {
			conflicts++
			return true, nil, apierrors.NewConflict(corev1.Resource("pods"), "tether-a", nil)
		}
		return false, nil, nil
	})
	h, stderr := fakeHook(cs, nil)
	h.Settings = settings
	c, err := h.connect()
	if err != nil {
		t.Fatal(err)
	}
	st := &hookapi.State{Pod: "tether-a", Namespace: "ci"}
	name, _, err := startContainerStep(ctx, h, c, st, &Container{Image: "alpine:3", EnvironmentVariables: map[string]string{"TOKEN": "s3cret"}})
	if err != nil {
		t.Fatalf("startContainerStep: %v (stderr %q)", err, stderr)
	}
	got, err := cs.CoreV1().Pods("ci").Get(ctx, "tether-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.EphemeralContainers) != 1 || got.Spec.EphemeralContainers[0].Name != name {
		t.Fatalf("ephemeral containers %+v, want the one step %q", got.Spec.EphemeralContainers, name)
	}
	if conflicts != 2 {
		t.Errorf("%d conflicts served, want 2", conflicts)
	}
	secs, _ := cs.CoreV1().Secrets("ci").List(ctx, metav1.ListOptions{})
	if len(secs.Items) != 1 {
		var names []string
		for _, s := range secs.Items {
			names = append(names, s.Name)
		}
		t.Errorf("step Secrets %v, want exactly the one of the added container", names)
	}
}
