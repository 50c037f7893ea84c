package kube

import (
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The wait's failures are typed: a caller learns which container cannot
// start, and why, with errors.As, through any wrapping.
func TestWaitErrorsAreTyped(t *testing.T) {
	now := time.Now()
	waiting := func(name, image, reason string) *corev1.Pod {
		return podWith(corev1.PodPending, func(s *corev1.PodStatus) {
			s.ContainerStatuses = []corev1.ContainerStatus{{Name: name, Image: image,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "details"}}}}
		})
	}
	initFailed := func(name string) *corev1.Pod {
		return podWith(corev1.PodPending, func(s *corev1.PodStatus) {
			s.InitContainerStatuses = []corev1.ContainerStatus{{Name: name, Image: "copy:1",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: " no dir \n"}}}}
		})
	}

	w := newWaiter()
	_, err := w.assess(waiting("svc-0-redis", "redis:nope", "ErrImagePull"), now)
	var pull *ImagePullError
	if !errors.As(fmt.Errorf("wrapped: %w", err), &pull) {
		t.Fatalf("image pull: %T %v, want an *ImagePullError", err, err)
	}
	if pull.Container != "svc-0-redis" || pull.Image != "redis:nope" || pull.Reason != "ErrImagePull" || pull.Message != "details" ||
		pull.Namespace != "ci" || pull.Pod != "p" {
		t.Errorf("image pull: %+v", pull)
	}

	w = newWaiter()
	pod := waiting(BuildContainer, "img:1", "CreateContainerConfigError")
	if _, err := w.assess(pod, now); err != nil {
		t.Fatalf("config error at first sight: %v", err)
	}
	_, err = w.assess(pod, now.Add(DefaultConfigErrorTimeout))
	var wait *WaitingError
	if !errors.As(err, &wait) || wait.Container != BuildContainer || wait.Reason != "CreateContainerConfigError" {
		t.Fatalf("lasting config error: %T %v, want a *WaitingError of %s", err, err, BuildContainer)
	}

	for _, name := range []string{InitContainer, ImageCopyPrefix + "externals"} {
		_, err = newWaiter().assess(initFailed(name), now)
		var init *InitContainerError
		if !errors.As(err, &init) || init.Container != name || init.ExitCode != 1 || init.Message != "no dir" {
			t.Fatalf("failed init container %s: %T %v", name, err, err)
		}
		if got := FailedContainer(fmt.Errorf("x: %w", err)); got != name {
			t.Errorf("FailedContainer = %q, want %q", got, name)
		}
	}

	ev := &corev1.Event{Type: corev1.EventTypeWarning, Reason: "Failed", Message: "Error: ImagePullBackOff",
		InvolvedObject: corev1.ObjectReference{Namespace: "ci", Name: "p", FieldPath: "spec.initContainers{" + InitContainer + "}"}}
	if !errors.As(pullFailure(ev), &pull) || pull.Container != InitContainer || pull.Reason != "ImagePullBackOff" {
		t.Fatalf("pull failure event: %v", pullFailure(ev))
	}
	if FailedContainer(errors.New("image x of container build cannot be pulled")) != "" {
		t.Error("FailedContainer read an untyped error's text")
	}
}

// FatalWaiting and WaitingFailure agree: every fatal reason has its error.
func TestWaitingFailure(t *testing.T) {
	pod := podWith(corev1.PodPending, nil)
	for _, reason := range []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
		"CreateContainerConfigError", "CreateContainerError", "RunContainerError", "ContainerCreating", "PodInitializing"} {
		cs := corev1.ContainerStatus{Name: "step", Image: "i", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
		err := WaitingFailure(pod, cs)
		if FatalWaiting(reason) != (err != nil) {
			t.Errorf("%s: FatalWaiting %v, WaitingFailure %v", reason, FatalWaiting(reason), err)
		}
		if err != nil && FailedContainer(err) != "step" {
			t.Errorf("%s: FailedContainer %q", reason, FailedContainer(err))
		}
	}
}
