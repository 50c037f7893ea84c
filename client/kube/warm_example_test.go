package kube_test

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/tether-ci/tether/client/kube"
)

// ExampleWarmPod creates one warm pod of the pool "small", as the pool's
// controller does: a pod with the pool's settings and no job data, whose
// shim waits for a job and ends itself after MaxIdle. Once it runs and its
// shim answered, MarkWarmReady makes it claimable.
func ExampleWarmPod() {
	ctx := context.Background()
	cfg, ns, err := kube.LoadConfig(kube.ConfigOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	settings := kube.Spec{Namespace: ns, Image: "alpine:3"}
	objs, err := kube.WarmPod(settings, kube.WarmOptions{Pool: "small", MaxIdle: 30 * time.Minute})
	if err != nil {
		fmt.Println(err)
		return
	}
	pod, err := kube.Create(ctx, cs, objs, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := pod.WaitRunning(ctx, kube.WaitOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	running, err := pod.Get(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := kube.MarkWarmReady(ctx, cs, running); err != nil {
		fmt.Println(err) // a Conflict: the pod changed meanwhile; look again
	}
}
