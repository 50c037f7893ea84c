package kube

import (
	"bufio"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/protocol"
)

// ReasonOOMKilled is the container status reason of a container the
// kernel's OOM killer ended. The container runtime also sets it when only
// a process of the container was killed (a script, with the shim living
// on), so it decides nothing about a job that reported its result.
const ReasonOOMKilled = "OOMKilled"

// ContainerEndedError is the error Transport.Connect returns (wrapped by
// the session's error) when the shim's container has terminated: the shim
// can never be reached again. It wraps client.ErrShimGone.
type ContainerEndedError struct {
	// Namespace, Pod and Container name the container.
	Namespace, Pod, Container string
	// ExitCode, Reason and Message are from the container's terminated
	// state; Reason is ReasonOOMKilled, "Error", "Completed", …. Message
	// keeps only the lines of the termination message that are not the
	// shim's records (its stderr diagnostics, say).
	ExitCode int32
	Reason   string
	Message  string
	// MemoryLimit is the container's memory limit in bytes; 0 when it has
	// none.
	MemoryLimit int64
}

// OOMKilled reports whether the kernel's OOM killer ended the container.
func (e *ContainerEndedError) OOMKilled() bool { return e.Reason == ReasonOOMKilled }

func (e *ContainerEndedError) Error() string {
	return fmt.Sprintf("container %s of pod %s/%s terminated (exit code %d, %s%s): %v",
		e.Container, e.Namespace, e.Pod, e.ExitCode, e.Reason, message(e.Message), client.ErrShimGone)
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

// diagnostics returns the lines of a shim container's termination message
// (the tail of its log) that are not records, joined by "; ".
func diagnostics(msg string) string {
	var keep []string
	sc := bufio.NewScanner(strings.NewReader(msg))
	sc.Buffer(nil, protocol.MaxRecord+1)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if _, _, err := protocol.Parse([]byte(sc.Text()+"\n"), nil); err == nil {
			continue
		}
		keep = append(keep, line)
	}
	return strings.Join(keep, "; ")
}
