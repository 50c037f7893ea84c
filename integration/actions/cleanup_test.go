package actions

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	ktesting "k8s.io/client-go/testing"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi"
	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
	"github.com/tether-ci/tether/integration/actions/hookapi"
)

// fakeHook is a Hook whose commands reach cs in namespace ci.
func fakeHook(cs kubernetes.Interface, env map[string]string) (*Hook, *bytes.Buffer) {
	var stderr bytes.Buffer
	return &Hook{
		Getenv: func(k string) string { return env[k] },
		Stdout: &bytes.Buffer{}, Stderr: &stderr,
		Connect: func(kube.ConfigOptions) (*rest.Config, string, kubeapi.Interface, error) {
			return &rest.Config{}, "ci", clientset.Wrap(cs), nil
		},
	}, &stderr
}

func jobPod(name, runner string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ci", Name: name, UID: types.UID("uid-" + name),
		Labels: map[string]string{LabelRunnerPod: runner, kube.LabelManagedBy: kube.ManagedByValue}}}
}

// cleanup_job deletes the job's pod and every other job pod of the runner
// pod, each under its own UID; a pod already gone is fine; a delete the
// API server refuses fails the command, naming the pod.
func TestCleanupJobAgainstFakeCluster(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(jobPod("tether-a", "runner-1"), jobPod("tether-left", "runner-1"), jobPod("tether-other", "runner-2"))
	h, stderr := fakeHook(cs, map[string]string{EnvRunnerPodName: "runner-1"})
	in := &hookapi.Input{Command: hookapi.CommandCleanupJob, State: &hookapi.State{Pod: "tether-a", Namespace: "ci"}}
	if code := CleanupJob(ctx, h, in); code != 0 {
		t.Fatalf("cleanup_job: exit %d: %s", code, stderr)
	}
	left, _ := cs.CoreV1().Pods("ci").List(ctx, metav1.ListOptions{})
	if len(left.Items) != 1 || left.Items[0].Name != "tether-other" {
		t.Fatalf("pods left %v, want only the other runner's", left.Items)
	}
	// Again: everything is gone already, which is fine.
	if code := CleanupJob(ctx, h, in); code != 0 {
		t.Fatalf("cleanup_job twice: exit %d: %s", code, stderr)
	}

	cs = fake.NewClientset(jobPod("tether-a", "runner-1"))
	cs.PrependReactor("delete", "pods", func(ktesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "tether-a", nil)
	})
	h, stderr = fakeHook(cs, nil)
	if code := CleanupJob(ctx, h, in); code != 1 || !strings.Contains(stderr.String(), "tether-a") || !strings.Contains(stderr.String(), "forbidden") {
		t.Fatalf("a refused delete: exit %d, stderr %q", code, stderr)
	}
}
