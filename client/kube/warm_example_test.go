package kube_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi"
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
	cs, err := kubeapi.New(cfg)
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

// ExampleClaim runs a job on a warm pod of the pool "small" when one has
// the job's pod settings, and on a new pod otherwise (never waiting for
// the pool). The job's scripts and variables travel over the attach
// stream: the warm pod never holds them.
func ExampleClaim() {
	ctx := context.Background()
	cfg, ns, err := kube.LoadConfig(kube.ConfigOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	cs, err := kubeapi.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	spec := kube.Spec{
		Namespace: ns,
		Image:     "alpine:3",
		Scripts:   []kube.Script{{Name: "build.sh", Content: []byte("echo building with $TOKEN\n")}},
		Env:       map[string]string{"TOKEN": "s3cret-token"},
		MaskEnv:   []string{"TOKEN"},
		Timeout:   30 * time.Minute,
	}
	pod, err := kube.Claim(ctx, cs, kube.ClaimRequest{Pool: "small", Spec: spec})
	if errors.Is(err, kube.ErrNoWarmPod) {
		objs, berr := kube.Build(spec) // a cold start: create the pod and wait for it
		if berr != nil {
			fmt.Println(berr)
			return
		}
		if pod, err = kube.Create(ctx, cs, objs, nil); err == nil {
			pod.Job = objs.Job
			err = pod.WaitRunning(ctx, kube.WaitOptions{})
		}
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = pod.Delete(context.WithoutCancel(ctx)) }()
	res, err := client.Run(ctx, pod.Transport(cfg, kube.TransportOptions{}), pod.Job,
		client.Options{Output: os.Stdout, ExitShim: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("exit code", res.ExitCode)
}
