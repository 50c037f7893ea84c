package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/client/kube/kubeapi"
)

// MarkWarmReady makes a warm pod claimable: once pod runs and its shim's
// hello is in the build container's log (Pod.Hello, which waits for it
// within ctx), it sets LabelWarm from WarmStarting to WarmIdle with an
// update that carries pod's resourceVersion, so a pod that changed
// meanwhile (claimed, deleted) is left alone: that error is a Conflict
// (or NotFound), which callers treat as "look again". The pool's
// controller calls it for each pod it created; it returns the updated pod.
func MarkWarmReady(ctx context.Context, cs kubeapi.Interface, pod *corev1.Pod) (*corev1.Pod, error) {
	if pod.Labels[LabelWarm] != WarmStarting {
		return nil, fmt.Errorf("kube: pod %s/%s is %s=%q, not %q", pod.Namespace, pod.Name, LabelWarm, pod.Labels[LabelWarm], WarmStarting)
	}
	if pod.Status.Phase != corev1.PodRunning {
		return nil, fmt.Errorf("kube: warm pod %s/%s is %s, not Running yet", pod.Namespace, pod.Name, pod.Status.Phase)
	}
	p := &Pod{Client: cs, Namespace: pod.Namespace, Name: pod.Name, uid: pod.UID, Container: BuildContainer}
	if _, err := p.Hello(ctx); err != nil {
		return nil, fmt.Errorf("kube: warm pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	up := pod.DeepCopy()
	up.Labels[LabelWarm] = WarmIdle
	got, err := cs.CoreV1().Pods(pod.Namespace).Update(ctx, up, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("kube: mark warm pod %s/%s %s: %w", pod.Namespace, pod.Name, WarmIdle, err)
	}
	return got, nil
}
