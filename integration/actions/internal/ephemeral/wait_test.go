package ephemeral

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	ktesting "k8s.io/client-go/testing"

	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
)

func podWith(phase corev1.PodPhase, states ...corev1.ContainerStatus) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ci", Name: "job"},
		Status: corev1.PodStatus{Phase: phase, EphemeralContainerStatuses: states}}
}

func step(state corev1.ContainerState) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: "step-1", Image: "alpine:3", State: state}
}

// The wait ends when the step's container runs, and fails, saying why,
// when it ended, cannot start, or its pod ended or is gone.
func TestWaitRunning(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want string
	}{
		"running": {podWith(corev1.PodRunning, step(corev1.ContainerState{Running: &corev1.ContainerStateRunning{}})), ""},
		"ended": {podWith(corev1.PodRunning, step(corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 127, Reason: "Error", Message: "no sh"}})),
			"ended as it started, before its program ran: exit code 127, Error: no sh"},
		"no image": {podWith(corev1.PodRunning, step(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "not found"}})),
			"(image alpine:3) cannot start: ErrImagePull: not found"},
		"pod ended": {podWith(corev1.PodFailed), "the job's pod ci/job ended (Failed) before the step's container ran"},
		"gone":      {nil, "the job's pod ci/job is gone"},
	} {
		t.Run(name, func(t *testing.T) {
			cs := fake.NewClientset()
			if tc.pod != nil {
				cs = fake.NewClientset(tc.pod)
			}
			err := WaitRunning(ctx, clientset.Wrap(cs).CoreV1(), "ci", "job", "step-1", time.Minute)
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// A container still pulling its image is waited for; a pod that cannot be
// read ends the wait only after the budget; a cancel ends it at once.
func TestWaitRunningWaits(t *testing.T) {
	pulling := podWith(corev1.PodRunning, step(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}))
	cs := fake.NewClientset(pulling)
	gets := 0
	cs.PrependReactor("get", "pods", func(ktesting.Action) (bool, runtime.Object, error) {
		gets++
		switch gets {
		case 1:
			return true, pulling, nil
		case 2:
			return true, nil, apierrors.NewServiceUnavailable("the API server restarts")
		}
		return true, podWith(corev1.PodRunning, step(corev1.ContainerState{Running: &corev1.ContainerStateRunning{}})), nil
	})
	if err := WaitRunning(context.Background(), clientset.Wrap(cs).CoreV1(), "ci", "job", "step-1", time.Minute); err != nil || gets != 3 {
		t.Fatalf("err %v after %d reads, want none after 3", err, gets)
	}

	cs = fake.NewClientset()
	cs.PrependReactor("get", "pods", func(ktesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("down")
	})
	start := time.Now()
	err := WaitRunning(context.Background(), clientset.Wrap(cs).CoreV1(), "ci", "job", "step-1", 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "could not be read for 500ms") || time.Since(start) < 500*time.Millisecond {
		t.Fatalf("err %v after %v, want the unreadable pod after the budget", err, time.Since(start))
	}

	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("the runner cancelled the job"))
	cs = fake.NewClientset(pulling)
	if err := WaitRunning(ctx, clientset.Wrap(cs).CoreV1(), "ci", "job", "step-1", time.Minute); err == nil || !strings.Contains(err.Error(), "cancelled while its container started: the runner cancelled the job") {
		t.Fatalf("err %v, want the cancel's cause", err)
	}
}

// A container that cannot be created is waited for while the kubelet
// retries (its first tries can miss the step's new Secret), and ends the
// wait once that persisted for the grace; an image that cannot be pulled
// ends it at once.
func TestWaitRunningConfigGrace(t *testing.T) {
	configErr := podWith(corev1.PodRunning, step(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason: "CreateContainerConfigError", Message: "failed to sync secret cache: timed out waiting for the condition"}}))
	cs := fake.NewClientset(configErr)
	gets := 0
	cs.PrependReactor("get", "pods", func(ktesting.Action) (bool, runtime.Object, error) {
		gets++
		if gets < 3 {
			return true, configErr, nil
		}
		return true, podWith(corev1.PodRunning, step(corev1.ContainerState{Running: &corev1.ContainerStateRunning{}})), nil
	})
	if err := waitRunning(context.Background(), clientset.Wrap(cs).CoreV1(), "ci", "job", "step-1", time.Minute, time.Minute); err != nil || gets != 3 {
		t.Fatalf("err %v after %d reads, want the container running after 3", err, gets)
	}

	start := time.Now()
	err := waitRunning(context.Background(), clientset.Wrap(fake.NewClientset(configErr)).CoreV1(), "ci", "job", "step-1", time.Minute, 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "cannot start: CreateContainerConfigError: failed to sync secret cache") || time.Since(start) < 500*time.Millisecond {
		t.Fatalf("err %v after %v, want the config error once it persisted for the grace", err, time.Since(start))
	}

	pull := podWith(corev1.PodRunning, step(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "not found"}}))
	start = time.Now()
	err = waitRunning(context.Background(), clientset.Wrap(fake.NewClientset(pull)).CoreV1(), "ci", "job", "step-1", time.Minute, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "ErrImagePull") || time.Since(start) > 10*time.Second {
		t.Fatalf("err %v after %v, want the pull error at once", err, time.Since(start))
	}
}
