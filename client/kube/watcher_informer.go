package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/tether-ci/tether/client/kube/kubeapi"
)

// newPodInformer returns an informer of namespace ns's pods that match
// selector, listing and watching through cs as client-go's generated pod
// informer does (without linking the informers of every API group).
func newPodInformer(cs kubeapi.Interface, ns, selector string) cache.SharedIndexInformer {
	pods := cs.CoreV1().Pods(ns)
	list := func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		o.LabelSelector = selector
		return pods.List(ctx, o)
	}
	watchPods := func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector = selector
		return pods.Watch(ctx, o)
	}
	return cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc:  list,
		WatchFuncWithContext: watchPods,
	}, &corev1.Pod{}, 0, cache.Indexers{})
}
