package kube

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tether-ci/tether/client/kube/kubeapi"
	"github.com/tether-ci/tether/internal/contract"
)

// A job pod is protected from voluntary disruption while its job runs:
// the Eviction API (`kubectl drain`, a cloud provider's node upgrade,
// Karpenter, the Cluster Autoscaler) refuses to evict a pod that a
// PodDisruptionBudget with an integer minAvailable of 1 selects alone, and
// a drain waits (up to its --timeout) until the job ended and the pod is
// deleted. The Cluster Autoscaler and Karpenter also read the pod's
// annotations and leave its node alone. Involuntary disruptions (the
// kubelet's evictions, preemption, node loss) are not stopped by any of
// this: see disrupted.go for how a job learns of them.

// ProtectionAnnotations returns the annotations that keep the Cluster
// Autoscaler and Karpenter from disrupting a pod's node: Build sets them on
// every job pod unless Spec.NoDisruptionProtection.
func ProtectionAnnotations() map[string]string {
	return map[string]string{
		AnnotationSafeToEvict:  contract.SafeToEvictValue,
		AnnotationDoNotDisrupt: contract.DoNotDisruptValue,
	}
}

// DisruptionBudget returns the PodDisruptionBudget that protects pod (its
// name, namespace, UID and LabelJob label are used): named like the pod,
// selecting pods with its LabelJob value (the pod alone), minAvailable 1
// as an integer (the Eviction API honours a budget of a pod without a
// controller only then), and owned by the pod, so the garbage collector
// deletes it with the pod.
func DisruptionBudget(pod *corev1.Pod) *policyv1.PodDisruptionBudget {
	one := intstr.FromInt32(1)
	b := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{
			Name:      pod.Name,
			Namespace: pod.Namespace,
			Labels:    map[string]string{LabelManagedBy: ManagedByValue, LabelJob: pod.Labels[LabelJob]},
		},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &one,
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{LabelJob: pod.Labels[LabelJob]}},
		},
	}
	ownedBy(&b.ObjectMeta, pod.Name, pod.UID)
	return b
}

// Protect creates pod's PodDisruptionBudget (DisruptionBudget), so a node
// drain waits for the pod's job instead of evicting it. Create calls it for
// every pod of Objects.Protect; a pod created without it (a warm pod, say,
// which stays evictable while idle) calls it once its job is known, and
// sets ProtectionAnnotations itself. A pod without a LabelJob label cannot
// be selected alone and is refused.
//
// The job runs without the budget when it cannot be made: callers log
// the error as a warning (ProtectionWarning) and go on.
func Protect(ctx context.Context, cs kubeapi.Interface, pod *corev1.Pod) error {
	if pod.Labels[LabelJob] == "" {
		return fmt.Errorf("protect pod %s/%s from eviction: it has no %s label to select it by", pod.Namespace, pod.Name, LabelJob)
	}
	b := DisruptionBudget(pod)
	if _, err := cs.PolicyV1().PodDisruptionBudgets(b.Namespace).Create(ctx, b, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create PodDisruptionBudget %s/%s: %w%s", b.Namespace, b.Name, err, budgetHint(err))
	}
	return nil
}

// budgetHint adds advice for a budget the API server refused.
func budgetHint(err error) string {
	switch {
	case apierrors.IsForbidden(err) && (strings.Contains(err.Error(), "exceeded quota") || strings.Contains(err.Error(), "failed quota")):
		return " (a ResourceQuota of the namespace limits poddisruptionbudgets: raise it, or turn the protection off with --no-disruption-protection)"
	case apierrors.IsForbidden(err):
		return " (the Role bound to this identity lacks create on poddisruptionbudgets (policy): grant it, or turn the protection off with --no-disruption-protection)"
	}
	return ""
}

// ProtectionWarning logs err, Protect's error, as the one warning a job
// gets when its pod runs unprotected.
func ProtectionWarning(log *slog.Logger, pod *corev1.Pod, err error) {
	log.Warn("the job runs without protection from node drains: a drain or eviction will end it", "pod", pod.Namespace+"/"+pod.Name, "err", err)
}
