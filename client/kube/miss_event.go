package kube

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/client/kube/kubeapi"
	"github.com/tether-ci/tether/internal/contract"
)

// missEventTimeout bounds the create of a miss's Event: the job starts
// cold right after, whatever the API server says.
const missEventTimeout = 2 * time.Second

// MissEvent returns the Event that records m in namespace ns at now: reason
// contract.EventWarmMiss on the namespace (a miss has no pod), the pool in
// the annotation LabelPool and the reason in AnnotationMissReason, as
// `tether pool status` and the pools' controller count them.
func MissEvent(ns string, m *MissError, now time.Time) *corev1.Event {
	t := metav1.NewTime(now)
	msg := fmt.Sprintf("a job asked pool %s for a warm pod and starts a pod of its own: %s", m.Pool, m.Reason)
	if m.Err != nil {
		msg += ": " + m.Err.Error()
	}
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: m.Pool + "-miss-",
			Namespace:    ns,
			Labels:       map[string]string{LabelManagedBy: ManagedByValue},
			Annotations:  map[string]string{contract.LabelPool: m.Pool, contract.AnnotationMissReason: string(m.Reason)},
		},
		// The namespace's own object: an Event's involved object of a
		// namespaced Event must name the Event's namespace.
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: ns, Namespace: ns},
		Reason:         contract.EventWarmMiss,
		Message:        msg,
		Type:           corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: "tether"},
		FirstTimestamp: t,
		LastTimestamp:  t,
		Count:          1,
	}
}

// RecordMiss creates m's Event (MissEvent) in ns; it is best effort: a
// claimer without create on events logs why at debug level and goes on.
// Claim records its own misses; an integration that decides against a
// claim before asking (a job its pool cannot serve) records its miss
// with it, so that every miss is counted alike.
func RecordMiss(ctx context.Context, cs kubeapi.Interface, ns string, m *MissError, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), missEventTimeout)
	defer cancel()
	if _, err := cs.CoreV1().Events(ns).Create(ctx, MissEvent(ns, m, time.Now()), metav1.CreateOptions{}); err != nil {
		log.Debug("cannot record the miss as an Event (tether pool status will not count it)", "pool", m.Pool, "err", err)
	}
}
