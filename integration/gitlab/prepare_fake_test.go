package gitlab

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
)

// fakeJobPod is the pod name the driver gives job 7 of runner 3.
const fakeJobPod = "tether-gitlab-r3-j7"

// fakeDriver is the driver's settings (args) on the Kubernetes connection
// cs, namespace ci (the seam its stage agent uses to share one), and the
// environment GitLab Runner gives prepare_exec for job 7 of runner 3
// (image alpine:3, the exit codes 11 and 12).
func fakeDriver(t *testing.T, cs *fake.Clientset, args ...string) (*Settings, Env) {
	t.Helper()
	cfg := gitlabTestFlags(t, args...)
	cfg.kube = &kubeConn{rc: &rest.Config{Host: "https://127.0.0.1:1"}, ns: "ci", cs: clientset.Wrap(cs),
		kubeconfig: cfg.Kubeconfig, context: cfg.Context, namespace: cfg.Namespace}
	resp := filepath.Join(t.TempDir(), "job.json")
	if err := os.WriteFile(resp, []byte(`{"image":{"name":"alpine:3"},"runner_info":{"timeout":600}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"JOB_RESPONSE_FILE": resp, "CUSTOM_ENV_CI_JOB_ID": "7", "CUSTOM_ENV_CI_RUNNER_ID": "3",
		"CUSTOM_ENV_CI_RUNNER_VERSION": "18.1.0", "BUILD_FAILURE_EXIT_CODE": "11", "SYSTEM_FAILURE_EXIT_CODE": "12"}
	return cfg, func(k string) string { return env[k] }
}

// startPodsAtOnce makes every pod created in cs (not a dry run) run at
// once, all its containers started, as the kubelet reports them.
func startPodsAtOnce(cs *fake.Clientset) {
	created := 0 // the fake serves one request at a time
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		c := a.(k8stesting.CreateActionImpl)
		p := c.GetObject().(*corev1.Pod)
		if len(c.CreateOptions.DryRun) > 0 {
			return true, p, nil // the API server stores nothing
		}
		created++
		p.UID = types.UID("uid-" + p.Name + "-" + strconv.Itoa(created))
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
		started := true
		running := func(c corev1.Container) corev1.ContainerStatus {
			return corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: true, Started: &started,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}
		}
		for _, c := range p.Spec.InitContainers {
			st := running(c) // a native sidecar runs on
			if c.RestartPolicy == nil {
				st.Ready, st.State = false, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}
			}
			p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, st)
		}
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, running(c))
		}
		return false, nil, nil // the tracker stores the pod as changed here
	})
}

// A pod left by an earlier prepare of the same job (the runner retried
// prepare_exec) is deleted and the job's pod created in its place; the
// job log says so, and the new pod is the job's (its labels, running).
func TestPrepareReplacesALeftoverPod(t *testing.T) {
	left := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fakeJobPod, Namespace: "ci", UID: "left-over"}}
	cs := fakeAuthorizer(t, "system:serviceaccount:ci:gitlab-runner", nil)
	if err := cs.Tracker().Add(left); err != nil {
		t.Fatal(err)
	}
	startPodsAtOnce(cs)
	cfg, env := fakeDriver(t, cs, "--gitlab-helper-image", "none")
	var out bytes.Buffer
	if code := Prepare(context.Background(), cfg, env, &out); code != 0 {
		t.Fatalf("prepare exited %d:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "is left from an earlier prepare of this job; replacing it") {
		t.Errorf("job log does not tell of the leftover pod:\n%s", out.String())
	}
	p, err := cs.CoreV1().Pods("ci").Get(context.Background(), fakeJobPod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.UID == left.UID || p.Labels["tether.dev/gitlab-job"] != "7" || p.Status.Phase != corev1.PodRunning {
		t.Errorf("pod %s: UID %s, labels %v, phase %s; want the job's new pod", p.Name, p.UID, p.Labels, p.Status.Phase)
	}
}

// A pod the namespace's quota refuses fails prepare as a system failure
// (the runner's SYSTEM_FAILURE_EXIT_CODE) with the quota's advice, and
// leaves no pod.
func TestPrepareQuotaRefusal(t *testing.T) {
	cs := fakeAuthorizer(t, "system:serviceaccount:ci:gitlab-runner", nil)
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), fakeJobPod,
			errors.New("exceeded quota: q, requested: pods=1, used: pods=5, limited: pods=5"))
	})
	cfg, env := fakeDriver(t, cs, "--gitlab-helper-image", "none")
	var out bytes.Buffer
	if code := Prepare(context.Background(), cfg, env, &out); code != 12 {
		t.Fatalf("prepare exited %d, want 12 (SYSTEM_FAILURE_EXIT_CODE):\n%s", code, out.String())
	}
	for _, w := range []string{"ERROR: tether: cannot create the job's pod", "exceeded quota", "has not enough left"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("job log does not say %q:\n%s", w, out.String())
		}
	}
	if l, _ := cs.CoreV1().Pods("ci").List(context.Background(), metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("%d pods left", len(l.Items))
	}
}

// A runner identity that may not create pods fails prepare before any
// pod request, naming what is missing.
func TestPrepareRefusedAccessStopsBeforeAnyPod(t *testing.T) {
	cs := fakeAuthorizer(t, "system:serviceaccount:ci:gitlab-runner", nil, "create pods")
	cfg, env := fakeDriver(t, cs, "--gitlab-helper-image", "none")
	var out bytes.Buffer
	if code := Prepare(context.Background(), cfg, env, &out); code != 12 {
		t.Fatalf("prepare exited %d, want 12:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "create") || !strings.Contains(out.String(), "pods") {
		t.Errorf("job log does not name the missing permission:\n%s", out.String())
	}
	for _, a := range cs.Actions() {
		if a.GetResource().Resource == "pods" {
			t.Errorf("a pod request after the refused access check: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// cleanup_exec deletes the job's pod; a pod already gone is fine; a
// refused delete is a system failure that names the refusal.
func TestCleanupAgainstTheAPI(t *testing.T) {
	t.Run("deletes the pod", func(t *testing.T) {
		cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fakeJobPod, Namespace: "ci", UID: "u1"}})
		cfg, env := fakeDriver(t, cs)
		var errOut bytes.Buffer
		if code := Cleanup(context.Background(), cfg, env, &errOut); code != 0 {
			t.Fatalf("cleanup exited %d: %s", code, errOut.String())
		}
		if _, err := cs.CoreV1().Pods("ci").Get(context.Background(), fakeJobPod, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the job's pod is still there (%v)", err)
		}
	})
	t.Run("pod already gone", func(t *testing.T) {
		cs := fake.NewClientset()
		cfg, env := fakeDriver(t, cs)
		var errOut bytes.Buffer
		if code := Cleanup(context.Background(), cfg, env, &errOut); code != 0 || errOut.Len() != 0 {
			t.Fatalf("cleanup exited %d: %s", code, errOut.String())
		}
	})
	t.Run("delete refused", func(t *testing.T) {
		cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fakeJobPod, Namespace: "ci", UID: "u1"}})
		cs.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), fakeJobPod, errors.New(`User "x" cannot delete resource "pods"`))
		})
		cfg, env := fakeDriver(t, cs)
		var errOut bytes.Buffer
		if code := Cleanup(context.Background(), cfg, env, &errOut); code != 12 {
			t.Fatalf("cleanup exited %d, want 12: %s", code, errOut.String())
		}
		if !strings.Contains(errOut.String(), "cannot delete") {
			t.Errorf("cleanup does not name the refusal: %s", errOut.String())
		}
	})
}
