package kube

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/tether-ci/tether/client"
)

// endedPod is a pod whose build container (memory limit 64Mi) has
// terminated with reason and message.
func endedPod(reason, message string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ci", Name: "job"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:      BuildContainer,
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
			Name:  BuildContainer,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: reason, Message: message}},
		}}},
	}
}

// Connect to a terminated container fails with a *ContainerEndedError
// that wraps client.ErrShimGone and carries the status' reason, the
// container's memory limit, and the termination message without the
// shim's records (the kubelet fills it from the log, which is the record
// stream).
func TestConnectReportsContainerEnded(t *testing.T) {
	log := "h 0 {\"protocol\":1}\nb 115 {\"script\":\"/tether/scripts/00-hog.sh\"}\no 203 0\ntether-shim: a diagnostic line\n"
	tr := &Transport{Config: &rest.Config{}, Client: fake.NewClientset(endedPod(ReasonOOMKilled, log)), Namespace: "ci", Pod: "job"}
	_, err := tr.Connect(t.Context())
	var ended *ContainerEndedError
	if !errors.As(err, &ended) || !errors.Is(err, client.ErrShimGone) {
		t.Fatalf("Connect: %v; want a *ContainerEndedError wrapping ErrShimGone", err)
	}
	if !ended.OOMKilled() || ended.ExitCode != 137 || ended.MemoryLimit != 64<<20 || ended.Container != BuildContainer {
		t.Errorf("error %+v; want OOMKilled, exit code 137, limit 64Mi, container build", ended)
	}
	if ended.Message != "tether-shim: a diagnostic line" {
		t.Errorf("message %q; want the diagnostic line alone", ended.Message)
	}
	want := "container build of pod ci/job terminated (exit code 137, OOMKilled: tether-shim: a diagnostic line): shim is gone"
	if err.Error() != want {
		t.Errorf("error text %q\nwant %q", err.Error(), want)
	}

	tr = &Transport{Config: &rest.Config{}, Client: fake.NewClientset(endedPod("Error", "")), Namespace: "ci", Pod: "job"}
	_, err = tr.Connect(t.Context())
	if !errors.As(err, &ended) || ended.OOMKilled() || ended.Reason != "Error" || ended.Message != "" {
		t.Fatalf("Connect: %v; want a *ContainerEndedError with reason Error, not OOMKilled", err)
	}
}
