package kube

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// imagePullFailures are waiting reasons of an image that cannot be pulled:
// they end WaitRunning at once.
var imagePullFailures = map[string]bool{
	"ErrImagePull":      true,
	"ImagePullBackOff":  true,
	"InvalidImageName":  true,
	"ErrImageNeverPull": true,
}

// configFailures are waiting reasons of a container that cannot be
// created: they end WaitRunning once they persist.
var configFailures = map[string]bool{
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
}

// FatalWaiting reports whether a container waiting for reason does not
// start by waiting longer: its image cannot be pulled (ErrImagePull,
// ImagePullBackOff, InvalidImageName, ErrImageNeverPull) or it cannot be
// created (CreateContainerConfigError, CreateContainerError,
// RunContainerError; the first seconds of a pod can see these while its
// ConfigMap or Secret is not created yet, so WaitRunning gives them
// WaitOptions.ConfigErrorTimeout).
func FatalWaiting(reason string) bool {
	return imagePullFailures[reason] || configFailures[reason]
}

// WaitingFailure is the error for the container status c of pod when its
// container waits for a FatalWaiting reason: an *ImagePullError for an
// image that cannot be pulled, else a *WaitingError; nil otherwise.
func WaitingFailure(pod *corev1.Pod, c corev1.ContainerStatus) error {
	w := c.State.Waiting
	switch {
	case w == nil:
		return nil
	case imagePullFailures[w.Reason]:
		return &ImagePullError{Namespace: pod.Namespace, Pod: pod.Name, Container: c.Name, Image: c.Image, Reason: w.Reason, Message: w.Message}
	case configFailures[w.Reason]:
		return &WaitingError{Namespace: pod.Namespace, Pod: pod.Name, Container: c.Name, Image: c.Image, Reason: w.Reason, Message: w.Message}
	}
	return nil
}

// ImagePullError is WaitRunning's error when an image of the pod cannot be
// pulled: read it with errors.As to learn which container's.
type ImagePullError struct {
	// Namespace and Pod name the pod.
	Namespace, Pod string
	// Container is the container whose image it is; "" when the kubelet's
	// event named none.
	Container string
	// Image is the image; "" when the kubelet's event said it (the
	// container's spec names it).
	Image string
	// Reason is the kubelet's: ErrImagePull, ImagePullBackOff,
	// InvalidImageName or ErrImageNeverPull.
	Reason string
	// Message is the kubelet's message, "" when it came from an event
	// (the pod's earlier events say why).
	Message string

	// fieldPath is the event's container field path ("" from a status).
	fieldPath string
	// fromEvent is set when the kubelet's event reported it.
	fromEvent bool
}

func (e *ImagePullError) Error() string {
	if e.fromEvent {
		what := "an image"
		if e.fieldPath != "" {
			what = "the image of " + e.fieldPath
		}
		return fmt.Sprintf("%s of pod %s/%s cannot be pulled: %s (the pod's events above say why)", what, e.Namespace, e.Pod, e.Reason)
	}
	return fmt.Sprintf("image %s of container %s cannot be pulled: %s%s", e.Image, e.Container, e.Reason, message(e.Message))
}

// WaitingError is WaitRunning's error when a container of the pod cannot
// be created (a FatalWaiting reason that is no image pull's) for longer
// than WaitOptions.ConfigErrorTimeout.
type WaitingError struct {
	// Namespace and Pod name the pod.
	Namespace, Pod string
	// Container and Image are the container that waits and its image.
	Container, Image string
	// Reason and Message are the kubelet's (CreateContainerConfigError, ...).
	Reason, Message string
}

func (e *WaitingError) Error() string {
	return fmt.Sprintf("container %s of pod %s/%s cannot be created: %s%s", e.Container, e.Namespace, e.Pod, e.Reason, message(e.Message))
}

// InitContainerError is WaitRunning's error when an init container of
// Tether's ended with a non-zero exit code: the shim's copy
// (InitContainer) or one of Spec.ImageCopies (ImageCopyPrefix+Name).
type InitContainerError struct {
	// Namespace and Pod name the pod.
	Namespace, Pod string
	// Container and Image are the init container and its image.
	Container, Image string
	// ExitCode, Reason and Message are its terminated state's.
	ExitCode        int32
	Reason, Message string
}

func (e *InitContainerError) Error() string {
	s := fmt.Sprintf("init container %s of pod %s/%s failed with exit code %d (%s%s)",
		e.Container, e.Namespace, e.Pod, e.ExitCode, e.Reason, message(e.Message))
	if e.Container == InitContainer {
		s += fmt.Sprintf(": does image %s carry /tether-shim?", e.Image)
	}
	return s
}

// FailedContainer is the container that err (from WaitRunning) says cannot
// start: the Container of an *ImagePullError, *WaitingError or
// *InitContainerError in err's chain; "" for any other error.
func FailedContainer(err error) string {
	var pull *ImagePullError
	var wait *WaitingError
	var init *InitContainerError
	switch {
	case errors.As(err, &pull):
		return pull.Container
	case errors.As(err, &wait):
		return wait.Container
	case errors.As(err, &init):
		return init.Container
	}
	return ""
}

// containerOfField is the container a field path such as
// "spec.containers{build}" or "spec.initContainers{tether-init}" names, ""
// for none.
func containerOfField(path string) string {
	_, rest, ok := strings.Cut(path, "{")
	if !ok {
		return ""
	}
	name, _, ok := strings.Cut(rest, "}")
	if !ok {
		return ""
	}
	return name
}
