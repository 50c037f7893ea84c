package kube

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube/kubeapi"
)

// ReasonOOMKilled is the container status reason of a container the
// kernel's OOM killer ended. The container runtime also sets it when only
// a process of the container was killed (a script, with the shim living
// on), and keeps it whatever ends the container later, so it decides
// nothing about a job that reported its result, and the container's exit
// code must say SIGKILL too (ContainerEndedError.OOMKilled).
const ReasonOOMKilled = "OOMKilled"

// exitSIGKILL is the exit code of a container whose first process was
// killed by SIGKILL (128+9), the OOM killer's signal.
const exitSIGKILL = 137

// How long Connect re-reads a container that SIGKILL ended with a reason
// other than ReasonOOMKilled (endedSettled): the runtime handles a
// container's exit and its OOM kill as separate events, so the kubelet may
// report reason "Error" first and "OOMKilled" in a later status update.
const (
	endSettleTimeout = 5 * time.Second
	endSettlePoll    = 250 * time.Millisecond
)

// ContainerEndedError is the error Transport.Connect returns (wrapped by
// the session's error) when the shim's container has terminated: the shim
// can never be reached again. It wraps client.ErrShimGone.
type ContainerEndedError struct {
	// Namespace, Pod and Container name the container.
	Namespace, Pod, Container string
	// ExitCode, Reason and Message are from the container's terminated
	// state; Reason is ReasonOOMKilled, "Error", "Completed", …. Message
	// keeps only the shim's own diagnostics from the termination message
	// (see diagnostics): no records, no script output, no goroutine
	// traces, at most a few lines.
	ExitCode int32
	Reason   string
	Message  string
	// MemoryLimit is the container's memory limit in bytes; 0 when it has
	// none.
	MemoryLimit int64
}

// OOMKilled reports whether the kernel's OOM killer ended the container:
// its reason is ReasonOOMKilled and its exit code 137 (SIGKILL). The reason
// alone is not enough: after a script was OOM-killed earlier (its status
// says so) the runtime keeps the reason whatever ends the shim later, a
// crash or an exit with a code of its own.
func (e *ContainerEndedError) OOMKilled() bool {
	return e.Reason == ReasonOOMKilled && e.ExitCode == exitSIGKILL
}

func (e *ContainerEndedError) Error() string {
	reason := e.Reason
	if reason == ReasonOOMKilled && !e.OOMKilled() {
		reason += ", from an earlier OOM kill of a process in it: the container itself was not OOM-killed"
	}
	return fmt.Sprintf("container %s of pod %s/%s terminated (exit code %d, %s%s): %v",
		e.Container, e.Namespace, e.Pod, e.ExitCode, reason, message(e.Message), client.ErrShimGone)
}

// Unwrap returns client.ErrShimGone.
func (e *ContainerEndedError) Unwrap() error { return client.ErrShimGone }

// containerEnded describes the terminated container st of pod.
func containerEnded(pod *corev1.Pod, st corev1.ContainerStatus) *ContainerEndedError {
	term := st.State.Terminated
	e := &ContainerEndedError{
		Namespace: pod.Namespace, Pod: pod.Name, Container: st.Name,
		ExitCode: term.ExitCode, Reason: term.Reason, Message: diagnostics(term.Message),
	}
	all := append(append([]corev1.Container{}, pod.Spec.Containers...), pod.Spec.InitContainers...)
	for _, c := range all {
		if c.Name == st.Name {
			if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
				e.MemoryLimit = q.Value()
			}
			break
		}
	}
	return e
}

// endedSettled describes the terminated container st of pod as the
// runtime finally reports it: a container that SIGKILL ended with a reason
// other than ReasonOOMKilled is read again (every poll, for up to settle)
// until its reason becomes ReasonOOMKilled, because the runtime may learn of
// the OOM kill after it reported the exit. The last state read is the
// answer; a failed read ends the wait with the state read before.
func endedSettled(ctx context.Context, cs kubeapi.Interface, pod *corev1.Pod, st corev1.ContainerStatus, settle, poll time.Duration) *ContainerEndedError {
	e := containerEnded(pod, st)
	if e.ExitCode != exitSIGKILL || e.Reason == ReasonOOMKilled {
		return e
	}
	t := time.NewTimer(settle)
	defer t.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return e
		case <-t.C:
			return e
		case <-tick.C:
		}
		p, err := cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return e
		}
		now, ok := containerStatus(p, st.Name)
		if !ok || now.State.Terminated == nil {
			return e
		}
		e = containerEnded(p, now)
		if e.Reason == ReasonOOMKilled {
			return e
		}
	}
}

// containerStatus returns the status of pod's container name, among the
// containers' or the init containers' (native sidecars such as the
// helper).
func containerStatus(pod *corev1.Pod, name string) (corev1.ContainerStatus, bool) {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for _, st := range list {
			if st.Name == name {
				return st, true
			}
		}
	}
	return corev1.ContainerStatus{}, false
}
