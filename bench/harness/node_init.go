package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/tether-ci/tether/client/kube"
)

// initContainerCost measures what the init container that copies the shim
// adds to a pod's start: tether's own job pod (kube.Build's, the build
// container running `true` instead of the shim) against the same pod
// without the init container, create → Succeeded as this process's watch
// sees it, cfg.repeat rounds interleaved. --shim-from=image removes that
// init container where the cluster has image volumes; this node's
// containerd has none, so that path is not measured here.
func initContainerCost(ctx context.Context, cfg *config, n *node, sec *section, log *slog.Logger) error {
	k, err := newKubeEnv(n.kubeconfig, n.images)
	if err != nil {
		return err
	}
	objs, err := kube.Build(kube.Spec{Namespace: k.ns, Image: n.images.build, HelperImage: n.images.helper,
		PullPolicy: corev1.PullNever, Serve: true})
	if err != nil {
		return err
	}
	withInit := objs.Pod.DeepCopy()
	withInit.Spec.Containers[0].Command, withInit.Spec.Containers[0].Args = []string{"true"}, nil
	withInit.Spec.Containers[0].Stdin = false
	withInit.Spec.TerminationGracePeriodSeconds = new(int64)
	without := withInit.DeepCopy()
	without.Spec.InitContainers = nil
	if len(withInit.Spec.InitContainers) != 1 || withInit.Spec.InitContainers[0].Name != kube.InitContainer {
		return fmt.Errorf("tether's pod has init containers %v; want only %s", withInit.Spec.InitContainers, kube.InitContainer)
	}
	var withRuns, withoutRuns durations
	for r := range cfg.repeat {
		for _, v := range []struct {
			pod  *corev1.Pod
			runs *durations
		}{{withInit, &withRuns}, {without, &withoutRuns}} {
			pod := v.pod.DeepCopy()
			pod.Name = randomName("bench-init-")
			d, err := podUntilSucceeded(ctx, k, pod)
			if err != nil {
				return err
			}
			*v.runs = append(*v.runs, d)
		}
		log.Info("init container cost", "round", r+1, "with", withRuns[r].Round(time.Millisecond), "without", withoutRuns[r].Round(time.Millisecond))
	}
	cost := withRuns.median() - withoutRuns.median()
	t := &table{head: []string{"tether's job pod, create → Succeeded (its container runs `true`)", "median", "range"}}
	t.add("with the init container that copies the shim (the default, `--shim-from=init`)", ms(withRuns.median()), ms(withRuns.min())+"–"+ms(withRuns.max()))
	t.add("the same pod without it (what `--shim-from=image` leaves)", ms(withoutRuns.median()), ms(withoutRuns.min())+"–"+ms(withoutRuns.max()))
	sec.tabs = append(sec.tabs, t)
	sec.notes = append(sec.notes, "The init container's cost is mostly the kubelet's: it sees that the init container ended only at its next look at the runtime (its pod lifecycle relist runs every second), and only then starts the build container. "+
		"`--shim-from=image` mounts the helper image as an image volume instead (Kubernetes 1.35+, or the ImageVolume gate, and a runtime with image volumes such as containerd 2.1); this node's containerd 1.6 has none, and its API server drops image volumes, so the e2e test proves the fallback to the init container here, not the image volume.")
	sec.goals = append(sec.goals, goal{
		measure:  "the shim's init container in a job pod's start (create → Succeeded)",
		tether:   fmt.Sprintf("+%s (%s with it)", ms(cost), ms(withRuns.median())),
		baseline: fmt.Sprintf("the same pod without it %s", ms(withoutRuns.median())),
		target:   "info: --shim-from=image removes it",
		verdict:  "info",
	})
	return nil
}

// podUntilSucceeded creates pod and returns how long it took to reach
// Succeeded as a watch of it reports, then deletes it.
func podUntilSucceeded(ctx context.Context, k *kubeEnv, pod *corev1.Pod) (time.Duration, error) {
	pods := k.cs.CoreV1().Pods(k.ns)
	sel := fields.OneTermEqualSelector("metadata.name", pod.Name).String()
	// A watch from the list's version: this node's API server refuses a
	// watch without one now and then (its etcd cannot report progress).
	list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return 0, fmt.Errorf("list pod %s: %w", pod.Name, err)
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: list.ResourceVersion})
	if err != nil {
		return 0, fmt.Errorf("watch pod %s: %w", pod.Name, err)
	}
	defer w.Stop()
	start := time.Now()
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return 0, fmt.Errorf("create pod %s: %w", pod.Name, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = pods.Delete(dctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	}()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return 0, fmt.Errorf("the watch of pod %s ended", pod.Name)
			}
			if ev.Type == watch.Error {
				return 0, fmt.Errorf("watch pod %s: %v", pod.Name, ev.Object)
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod || ev.Type == watch.Deleted {
				continue
			}
			switch p.Status.Phase {
			case corev1.PodSucceeded:
				return time.Since(start), nil
			case corev1.PodFailed:
				return 0, fmt.Errorf("pod %s failed: %s", pod.Name, p.Status.Message)
			}
		case <-timeout:
			return 0, fmt.Errorf("pod %s did not succeed within 2 minutes", pod.Name)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}
