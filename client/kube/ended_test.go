package kube

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	ktesting "k8s.io/client-go/testing"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
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
	tr := &Transport{Config: &rest.Config{}, Client: clientset.Wrap(fake.NewClientset(endedPod(ReasonOOMKilled, log))), Namespace: "ci", Pod: "job"}
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

	tr = &Transport{Config: &rest.Config{}, Client: clientset.Wrap(fake.NewClientset(endedPod("Error", ""))), Namespace: "ci", Pod: "job"}
	_, err = tr.Connect(t.Context())
	if !errors.As(err, &ended) || ended.OOMKilled() || ended.Reason != "Error" || ended.Message != "" {
		t.Fatalf("Connect: %v; want a *ContainerEndedError with reason Error, not OOMKilled", err)
	}
}

// kubeletEndedPod is pod ci/job as the kubelet writes it once the build
// container (memory limit 64Mi) has terminated with exitCode and reason:
// phase Failed, the container's ID, times and termination message (the
// tail of its log: the shim's records), the helper sidecar and a service
// stopped after it with reason Error, exit code 137 (the kubelet's
// SIGKILL after their grace), and the init container completed.
func kubeletEndedPod(exitCode int32, reason string) *corev1.Pod {
	start := metav1.NewTime(time.Date(2026, 11, 23, 11, 0, 0, 0, time.UTC))
	end := metav1.NewTime(start.Add(9 * time.Second))
	terminated := func(code int32, reason, id string) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, Reason: reason, StartedAt: start, FinishedAt: end, ContainerID: "containerd://" + id,
		}}
	}
	build := terminated(exitCode, reason, "b1")
	build.Terminated.Message = "h 0 {\"protocol\":1}\nb 115 {\"script\":\"/tether/files/step_script\"}\n"
	limit := corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ci", Name: "job", UID: "u1", ResourceVersion: "42"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: InitContainer}, {Name: HelperContainer}, {Name: "svc-0-redis"}},
			Containers:     []corev1.Container{{Name: BuildContainer, Resources: limit}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodFailed,
			InitContainerStatuses: []corev1.ContainerStatus{
				{Name: InitContainer, State: terminated(0, "Completed", "i1")},
				{Name: HelperContainer, State: terminated(137, "Error", "h1")},
				{Name: "svc-0-redis", State: terminated(137, "Error", "s1")},
			},
			ContainerStatuses: []corev1.ContainerStatus{{Name: BuildContainer, State: build, ImageID: "sha256:abc", ContainerID: "containerd://b1"}},
		},
	}
}

// podSequence is a fake clientset whose Gets of pod ci/job return pods in
// turn (the last one from then on); gets counts them.
func podSequence(pods ...*corev1.Pod) (*fake.Clientset, *atomic.Int32) {
	cs := fake.NewClientset(pods[0])
	var gets atomic.Int32
	cs.PrependReactor("get", "pods", func(ktesting.Action) (bool, runtime.Object, error) {
		n := int(gets.Add(1))
		return true, pods[min(n, len(pods))-1].DeepCopy(), nil
	})
	return cs, &gets
}

// The runtime may report a container's exit before its OOM kill: the
// kubelet writes reason Error with exit code 137, then OOMKilled in a
// later status update. Connect waits for the final reason: the job's
// container was OOMKilled.
func TestConnectWaitsForTheOOMKilledReason(t *testing.T) {
	cs, gets := podSequence(kubeletEndedPod(137, "Error"), kubeletEndedPod(137, "Error"), kubeletEndedPod(137, ReasonOOMKilled))
	tr := &Transport{Config: &rest.Config{}, Client: clientset.Wrap(cs), Namespace: "ci", Pod: "job"}
	_, err := tr.Connect(t.Context())
	var ended *ContainerEndedError
	if !errors.As(err, &ended) || !ended.OOMKilled() || ended.ExitCode != 137 || ended.MemoryLimit != 64<<20 {
		t.Fatalf("Connect: %v (after %d reads of the pod); want the container OOMKilled with exit code 137 and limit 64Mi", err, gets.Load())
	}
	if gets.Load() != 3 {
		t.Errorf("%d reads of the pod; want 3 (until the reason became OOMKilled)", gets.Load())
	}
}

// A container SIGKILL ended for another reason (its reason stays Error)
// is read again only for the settle time, then reported as it is; an exit
// that is not SIGKILL's is final at once.
func TestEndedSettledStopsWaiting(t *testing.T) {
	pod := kubeletEndedPod(137, "Error")
	cs, gets := podSequence(pod)
	e := endedSettled(t.Context(), clientset.Wrap(cs), pod, pod.Status.ContainerStatuses[0], 200*time.Millisecond, 10*time.Millisecond)
	if e.OOMKilled() || e.Reason != "Error" || e.ExitCode != 137 {
		t.Errorf("%+v; want reason Error, exit code 137, not OOMKilled", e)
	}
	if gets.Load() < 2 {
		t.Errorf("%d reads of the pod while the reason was Error after SIGKILL; want it read again", gets.Load())
	}

	for _, tc := range []struct {
		code   int32
		reason string
	}{{2, "Error"}, {0, "Completed"}, {124, "Error"}, {2, ReasonOOMKilled}} {
		pod := kubeletEndedPod(tc.code, tc.reason)
		cs, gets := podSequence(pod, kubeletEndedPod(137, ReasonOOMKilled))
		e := endedSettled(t.Context(), clientset.Wrap(cs), pod, pod.Status.ContainerStatuses[0], time.Minute, time.Millisecond)
		if gets.Load() != 0 || e.ExitCode != tc.code || e.Reason != tc.reason {
			t.Errorf("exit %d %s: %d reads, reported %+v; want it final at once", tc.code, tc.reason, gets.Load(), e)
		}
	}

	// The pod gone while waiting: what was read is the answer.
	cs = fake.NewClientset()
	e = endedSettled(t.Context(), clientset.Wrap(cs), pod, pod.Status.ContainerStatuses[0], time.Minute, time.Millisecond)
	if e.Reason != "Error" || e.ExitCode != 137 {
		t.Errorf("pod gone: %+v", e)
	}
}

// A script OOM-killed earlier leaves the runtime's reason OOMKilled on the
// container whatever ends it later: a shim that then crashed (exit code 2)
// was not OOM-killed itself, and the error says where the reason is from.
func TestEarlierOOMKillIsNotTheContainers(t *testing.T) {
	cs, _ := podSequence(kubeletEndedPod(2, ReasonOOMKilled))
	tr := &Transport{Config: &rest.Config{}, Client: clientset.Wrap(cs), Namespace: "ci", Pod: "job"}
	_, err := tr.Connect(t.Context())
	var ended *ContainerEndedError
	if !errors.As(err, &ended) || ended.OOMKilled() || ended.ExitCode != 2 || ended.Reason != ReasonOOMKilled {
		t.Fatalf("Connect: %v; want a container end with exit code 2, reason OOMKilled, not OOMKilled()", err)
	}
	if !strings.Contains(err.Error(), "exit code 2, OOMKilled, from an earlier OOM kill of a process in it: the container itself was not OOM-killed") {
		t.Errorf("error %q does not say the reason is from an earlier kill", err)
	}
	cs, _ = podSequence(kubeletEndedPod(137, ReasonOOMKilled))
	tr = &Transport{Config: &rest.Config{}, Client: clientset.Wrap(cs), Namespace: "ci", Pod: "job"}
	if _, err := tr.Connect(t.Context()); !errors.As(err, &ended) || !ended.OOMKilled() || strings.Contains(err.Error(), "earlier") {
		t.Fatalf("exit 137 OOMKilled: %v; want OOMKilled()", err)
	}
}
