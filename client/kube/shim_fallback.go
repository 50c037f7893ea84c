package kube

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// replacePoll is how often a pod's replacement checks whether the old pod
// and its owned objects are gone.
const replacePoll = 250 * time.Millisecond

// Where the API server keeps image volumes but the container runtime has
// none (containerd before 2.1, CRI-O before 1.31), the kubelet still asks
// the runtime to create the shim's containers with the image mount, and
// the runtime fails:
// the kubelet reports the container waiting with reason
// CreateContainerError (its ErrCreateContainer) and the runtime's own
// message. What the runtime says:
const (
	// imageVolumeMountFailed is in the message of a runtime that has
	// image volumes but could not mount one (the CRI's
	// ErrImageVolumeMountFailed): CRI-O from 1.33 starts its message with
	// it (cri-o/cri-o, server/container_create_linux.go,
	// addOCIBindMounts), containerd from 2.2 wraps it in mountImageVolume
	// below.
	imageVolumeMountFailed = "ImageVolumeMountFailed"
	// mountImageVolume starts containerd's message (2.1 on) when it
	// cannot mount an image volume: only image mounts are made at that
	// step (containerd/containerd, internal/cri/server/container_create.go
	// and container_image_mount.go, mutateMounts).
	mountImageVolume = "failed to mount image volume: "
	// mountImage starts the message of CRI-O 1.31 and 1.32 when it cannot
	// mount an image volume (cri-o/cri-o, server/container_create_linux.go,
	// addOCIBindMounts, before ImageVolumeMountFailed).
	mountImage = "mount image: "
	// emptyMountSource is in the message of a runtime without image
	// volumes: it takes the image mount for a bind mount of an empty host
	// path and cannot create it (containerd 1.6 to 2.0: `failed to
	// generate container "ID" spec: failed to mkdir "": mkdir : no such
	// file or directory`). In a job pod only the image volume's mount has
	// no host path.
	emptyMountSource = `failed to mkdir "": `
	// emptyHostPath is the whole message of CRI-O without image volumes
	// (before 1.31): the CRI mount's image field is unknown to it, so it
	// sees a bind mount without a host path and refuses it (cri-o/cri-o,
	// server/container_create_linux.go, addOCIBindMounts, unchanged from
	// 1.14 to 1.30; the kubelet reports the runtime's message as is, see
	// kubernetes/kubernetes, pkg/kubelet/kuberuntime/kuberuntime_container.go,
	// startContainer).
	emptyHostPath = "mount.HostPath is empty"
)

// imageVolumeError is WaitRunning's finding that the container runtime
// cannot create a container of the pod because of the shim's image volume.
type imageVolumeError struct {
	pod, container, reason, message string
}

func (e *imageVolumeError) Error() string {
	return fmt.Sprintf("container %s of pod %s cannot be created with the shim's image volume: %s%s",
		e.container, e.pod, e.reason, message(e.message))
}

// imageVolumeFailure returns the error for the first container of pod that
// mounts the shim's image volume (per spec, the pod as created) and that
// the runtime failed to create because of it.
func imageVolumeFailure(spec, pod *corev1.Pod) *imageVolumeError {
	mounts := map[string]bool{}
	for _, list := range [][]corev1.Container{spec.Spec.InitContainers, spec.Spec.Containers} {
		for _, c := range list {
			for _, m := range c.VolumeMounts {
				mounts[c.Name] = mounts[c.Name] || m.Name == shimVolume
			}
		}
	}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, c := range list {
			w := c.State.Waiting
			if !mounts[c.Name] || w == nil || w.Reason != "CreateContainerError" {
				continue
			}
			if imageMountRefused(w.Message) {
				return &imageVolumeError{pod: pod.Namespace + "/" + pod.Name, container: c.Name, reason: w.Reason, message: w.Message}
			}
		}
	}
	return nil
}

// imageMountRefused reports whether msg, a runtime's answer to the
// kubelet's request to create a container, says that the runtime cannot
// mount an image volume (see the constants above).
func imageMountRefused(msg string) bool {
	return strings.Contains(msg, imageVolumeMountFailed) || strings.HasPrefix(msg, mountImageVolume) ||
		strings.HasPrefix(msg, mountImage) || strings.Contains(msg, emptyMountSource) || msg == emptyHostPath
}

// replaceWithFallback deletes the pod, which the container runtime cannot
// run because of the shim's image volume, and creates its Fallback (an
// init container copies the shim) under the same name, with the ConfigMap
// and Secret owned by the new pod: the old pod is deleted at once, and
// the garbage collector removes its copies of them first. p's UID becomes
// the new pod's. A Delete of p on another goroutine meanwhile stops it (see
// Delete): the new pod is not created, or Delete waits for its create and
// deletes it.
func (p *Pod) replaceWithFallback(ctx context.Context, why *imageVolumeError) error {
	objs := p.imageObjs
	p.imageObjs = nil
	name := p.Namespace + "/" + p.Name
	p.logger().Info("the container runtime cannot mount the shim's image volume (containerd before 2.1 or CRI-O before 1.31, say): "+
		"the pod is created again with an init container that copies the shim",
		"pod", name, "container", why.container, "reason", why.reason, "message", why.message)
	old := p.UID()
	now, bg := int64(0), metav1.DeletePropagationBackground
	err := p.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &now, PropagationPolicy: &bg, Preconditions: &metav1.Preconditions{UID: &old}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("%w; deleting the pod to create it with an init container failed: %w", why, err)
	}
	for {
		got, err := p.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && got.UID != old) {
			break
		}
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("%w; reading the pod deleted to be created with an init container failed: %w", why, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w; the pod, deleted to be created with an init container, is still there: %w", why, context.Cause(ctx))
		case <-time.After(replacePoll):
		}
	}
	finish, ok := p.beginReplacing()
	if !ok {
		return fmt.Errorf("%w; the pod was deleted before its replacement with an init container was created", why)
	}
	np, err := createOwned(ctx, p.Client, objs.Fallback, objs, p.logger(), true)
	if finish(np) {
		return fmt.Errorf("%w; the pod was deleted while its replacement with an init container was created", why)
	}
	if err != nil {
		return fmt.Errorf("%w; creating the pod with an init container failed: %w", why, err)
	}
	return nil
}
