package kube

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tether-ci/tether/client"
)

// Reasons of a DisruptedError besides the DisruptionTarget condition's
// (corev1.PodReasonEvictionByEvictionAPI and the like).
const (
	// ReasonEvicted is the pod status reason the kubelet's eviction
	// manager sets on a pod it evicted (node pressure, a container over
	// its ephemeral-storage limit).
	ReasonEvicted = "Evicted"
	// ReasonNodeNotReady says the pod's node stopped working: its Ready
	// condition is not True.
	ReasonNodeNotReady = "NodeNotReady"
	// ReasonEvictionByEvictionAPI is the DisruptionTarget condition's
	// reason on a pod the Eviction API evicts (a node drain).
	ReasonEvictionByEvictionAPI = "EvictionByEvictionAPI"
	// ReasonDeletionByTaintManager is the DisruptionTarget condition's
	// reason on a pod the taint manager deletes (a NoExecute taint).
	ReasonDeletionByTaintManager = "DeletionByTaintManager"
)

// DisruptedError is the error a job run through Run ends with when
// Kubernetes ended the job's pod involuntarily: the kubelet evicted it, the
// scheduler preempted it, the Eviction API evicted it (a node drain of an
// unprotected pod), the taint manager deleted it, or its node stopped
// working. The job's outcome is unknown; integrations report it as a
// system failure (GitLab's runner_system_failure) with Error as its one
// line. It wraps client.ErrShimGone. Read it with errors.As.
type DisruptedError struct {
	// Namespace and Pod name the job's pod.
	Namespace, Pod string
	// Reason is Kubernetes' own: ReasonEvicted, ReasonNodeNotReady, or
	// the reason of the pod's DisruptionTarget condition
	// (EvictionByEvictionAPI, PreemptionByScheduler, TerminationByKubelet,
	// DeletionByTaintManager, …).
	Reason string
	// Message says what happened, in Kubernetes' words, on one line:
	// "evicted by the kubelet: Pod ephemeral local storage usage exceeds
	// the total limit of containers 10Mi.", "preempted by pod ci/urgent,
	// priority 1000", "node n1 is NotReady since 12:03:04: its kubelet
	// stopped posting status".
	Message string
}

func (e *DisruptedError) Error() string {
	return fmt.Sprintf("pod %s/%s: %s", e.Namespace, e.Pod, e.Message)
}

// Unwrap returns client.ErrShimGone.
func (e *DisruptedError) Unwrap() error { return client.ErrShimGone }

// podDisruption describes the disruption pod's status shows, if any: the
// kubelet's eviction (status reason Evicted), or a DisruptionTarget
// condition. Preemption's preemptor and node loss are not in the pod's
// status: see disruptionWatch.
func podDisruption(pod *corev1.Pod) *DisruptedError {
	e := &DisruptedError{Namespace: pod.Namespace, Pod: pod.Name}
	if pod.Status.Reason == ReasonEvicted {
		e.Reason, e.Message = ReasonEvicted, "evicted by the kubelet"+message(oneLine(pod.Status.Message))
		return e
	}
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.DisruptionTarget || c.Status != corev1.ConditionTrue {
			continue
		}
		e.Reason = c.Reason
		switch c.Reason {
		case ReasonEvictionByEvictionAPI:
			e.Message = "evicted by the Eviction API (node drain)"
		case corev1.PodReasonPreemptionByScheduler:
			e.Message = "preempted by a higher-priority pod"
		case corev1.PodReasonTerminationByKubelet:
			e.Message = "terminated by the kubelet"
		case ReasonDeletionByTaintManager:
			e.Message = "deleted by the taint manager (a NoExecute taint on its node)"
		default:
			e.Message = "disrupted (" + c.Reason + ")"
		}
		e.Message += message(oneLine(c.Message))
		return e
	}
	return nil
}

// nodeLossSuspected reports whether pod looks like its node stopped
// working: running, not being deleted, and its Ready condition False
// without a reason (the kubelet always gives one; the node lifecycle
// controller marks the pods of a node that stopped posting status this
// way).
func nodeLossSuspected(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil || pod.Spec.NodeName == "" {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionFalse && c.Reason == ""
		}
	}
	return false
}

// nodeDisruption describes node's Ready condition when it is not True
// (nil when it is).
func nodeDisruption(ns, pod string, node *corev1.Node) *DisruptedError {
	for _, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			return nil
		}
		why := oneLine(c.Message)
		if c.Reason == "NodeStatusUnknown" {
			why = "its kubelet stopped posting status"
		}
		return &DisruptedError{Namespace: ns, Pod: pod, Reason: ReasonNodeNotReady,
			Message: fmt.Sprintf("lost its node: node %s is NotReady since %s%s", node.Name,
				c.LastTransitionTime.Local().Format(time.TimeOnly), message(why))}
	}
	return &DisruptedError{Namespace: ns, Pod: pod, Reason: ReasonNodeNotReady,
		Message: fmt.Sprintf("lost its node: node %s reports no Ready condition", node.Name)}
}

// oneLine joins m's lines and trims it.
func oneLine(m string) string {
	return strings.Join(strings.Fields(m), " ")
}
