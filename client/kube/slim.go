package kube

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Watcher's caches keep pods and events slimmed to what its readers
// use (WaitRunning's assessment and event log, the subscriptions' keys):
// a pod's spec, managed fields, annotations and most of each container
// status are never read from a cache, and would be kept for every Tether
// pod of the namespace. slim_test.go checks that every reader decides
// alike on the full and on the slim object.

// slimPodTransform is the pod informer's cache.TransformFunc.
func slimPodTransform(obj any) (any, error) {
	if p, ok := obj.(*corev1.Pod); ok {
		return slimPod(p), nil
	}
	return obj, nil
}

// slimPod returns a copy of p with only what the Watcher's readers use:
// identity, deletion, and the status (phase, reason, message, conditions,
// the containers' states).
func slimPod(p *corev1.Pod) *corev1.Pod {
	s := &corev1.Pod{
		TypeMeta: p.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:              p.Name,
			Namespace:         p.Namespace,
			UID:               p.UID,
			ResourceVersion:   p.ResourceVersion,
			DeletionTimestamp: p.DeletionTimestamp,
		},
		Status: corev1.PodStatus{
			Phase:                 p.Status.Phase,
			Reason:                p.Status.Reason,
			Message:               p.Status.Message,
			InitContainerStatuses: slimStatuses(p.Status.InitContainerStatuses),
			ContainerStatuses:     slimStatuses(p.Status.ContainerStatuses),
		},
	}
	if len(p.Status.Conditions) > 0 {
		s.Status.Conditions = make([]corev1.PodCondition, len(p.Status.Conditions))
		for i, c := range p.Status.Conditions {
			s.Status.Conditions[i] = corev1.PodCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message}
		}
	}
	return s
}

func slimStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i, c := range in {
		out[i] = corev1.ContainerStatus{Name: c.Name, Image: c.Image, State: c.State,
			RestartCount: c.RestartCount, Ready: c.Ready, Started: c.Started}
	}
	return out
}

// slimEvent returns a copy of e with only what the Watcher's readers use:
// the involved object, type, reason, message and when it happened.
func slimEvent(e *corev1.Event) *corev1.Event {
	return &corev1.Event{
		TypeMeta: e.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:              e.Name,
			Namespace:         e.Namespace,
			UID:               e.UID,
			ResourceVersion:   e.ResourceVersion,
			CreationTimestamp: e.CreationTimestamp,
		},
		InvolvedObject: corev1.ObjectReference{
			Kind:      e.InvolvedObject.Kind,
			Namespace: e.InvolvedObject.Namespace,
			Name:      e.InvolvedObject.Name,
			UID:       e.InvolvedObject.UID,
			FieldPath: e.InvolvedObject.FieldPath,
		},
		Type:           e.Type,
		Reason:         e.Reason,
		Message:        e.Message,
		Count:          e.Count,
		FirstTimestamp: e.FirstTimestamp,
		LastTimestamp:  e.LastTimestamp,
		EventTime:      e.EventTime,
		Series:         e.Series,
	}
}

// eventTime is when e last happened: the latest of its timestamps (events
// of the events.k8s.io API set EventTime and a series, core ones
// LastTimestamp; the API server always sets CreationTimestamp). Zero when
// it has none.
func eventTime(e *corev1.Event) metav1.Time {
	t := e.CreationTimestamp
	for _, u := range []metav1.Time{e.FirstTimestamp, e.LastTimestamp, metav1.Time(e.EventTime)} {
		if u.After(t.Time) {
			t = u
		}
	}
	if e.Series != nil && e.Series.LastObservedTime.After(t.Time) {
		t = metav1.Time(e.Series.LastObservedTime)
	}
	return t
}
