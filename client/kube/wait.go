package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults of WaitOptions.
const (
	// DefaultStartTimeout bounds the whole wait for Running.
	DefaultStartTimeout = 10 * time.Minute
	// DefaultScheduleTimeout is how long a pod may stay unschedulable.
	DefaultScheduleTimeout = 2 * time.Minute
	// DefaultConfigErrorTimeout is how long a container may fail to be
	// created (CreateContainerConfigError, CreateContainerError) before the
	// wait gives up; the first seconds can see the ConfigMap or Secret
	// not created yet.
	DefaultConfigErrorTimeout = 30 * time.Second
)

// absentGrace is how long WaitRunning waits for a pod its caches lack once
// they synced (see waitRunning) before it asks the API server whether the
// pod exists at all.
const absentGrace = 3 * time.Second

// WaitOptions tune WaitRunning. The zero value takes the defaults.
type WaitOptions struct {
	// Timeout bounds the whole wait; default DefaultStartTimeout.
	Timeout time.Duration
	// ScheduleTimeout is how long the pod may stay unschedulable; default
	// DefaultScheduleTimeout.
	ScheduleTimeout time.Duration
	// ConfigErrorTimeout is how long a container may fail to be created;
	// default DefaultConfigErrorTimeout.
	ConfigErrorTimeout time.Duration
}

func (o WaitOptions) withDefaults() WaitOptions {
	if o.Timeout <= 0 {
		o.Timeout = DefaultStartTimeout
	}
	if o.ScheduleTimeout <= 0 {
		o.ScheduleTimeout = DefaultScheduleTimeout
	}
	if o.ConfigErrorTimeout <= 0 {
		o.ConfigErrorTimeout = DefaultConfigErrorTimeout
	}
	return o
}

// WaitRunning waits until the shim's container runs, logging the pod's
// phase changes and events (scheduling, image pulls, quota) to p.Logger. It
// gives up with an error saying why on an image that cannot be pulled, a
// failed init container, a pod that stays unschedulable or cannot create
// its container, a pod that ended or was deleted, and on timeout. It does
// not delete the pod.
//
// A pod whose shim comes from an image volume (ShimFromImage) that the
// container runtime cannot mount (the API server keeps image volumes, the
// runtime has none: containerd before 2.1, CRI-O before 1.31) is deleted and created again,
// under the same name, as its Fallback with the init container, saying so
// in one line to p.Logger; p.UID() becomes the new pod's.
//
// It follows the pod and its events through p.Watcher (shared by every job
// of a runner), or through a Watcher of its own when p.Watcher is nil.
func (p *Pod) WaitRunning(ctx context.Context, opts WaitOptions) error {
	opts = opts.withDefaults()
	ctx, cancel := context.WithTimeoutCause(ctx, opts.Timeout,
		fmt.Errorf("pod %s/%s did not start within %s", p.Namespace, p.Name, opts.Timeout))
	defer cancel()

	wt := p.Watcher
	if wt == nil {
		wt = NewWatcher(p.Client)
		defer wt.Close()
	}
	for {
		err := p.waitRunning(ctx, wt, opts)
		var iv *imageVolumeError
		if !errors.As(err, &iv) {
			p.started.Store(err == nil)
			return err
		}
		if err := p.replaceWithFallback(ctx, iv); err != nil {
			return err
		}
	}
}

// waitRunning is WaitRunning for the pod p is now.
func (p *Pod) waitRunning(ctx context.Context, wt *Watcher, opts WaitOptions) error {
	sub, release := wt.subscribe(p.Namespace, p.Name, p.UID(), p.createdAt())
	defer release()

	w := &waiter{pod: p, opts: opts, since: map[string]time.Time{}}
	evs := &eventLog{pod: p, seen: map[string]bool{}}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	synced := sub.synced
	var absent <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-synced:
			synced = nil
			if !sub.cached() {
				// The caches hold no such pod yet. The informer's list
				// may come from the API server's watch cache as it was a
				// moment before the pod was created; the pod then comes
				// in the watch that follows. Only a pod deleted before
				// the list never comes: ask whether it exists if it has
				// not come after a while.
				t := time.NewTimer(absentGrace)
				defer t.Stop()
				absent = t.C
			}
		case <-absent:
			absent = nil
			if w.last == nil && !sub.cached() {
				if _, err := p.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
					return fmt.Errorf("pod %s/%s was deleted while starting", p.Namespace, p.Name)
				}
			}
		case <-sub.notify:
			cur, gone, events := sub.take()
			for _, ev := range events {
				if started, err := evs.see(ev); started || err != nil {
					return err
				}
			}
			if gone {
				return fmt.Errorf("pod %s/%s was deleted while starting", p.Namespace, p.Name)
			}
			if cur != nil {
				if done, err := w.assess(cur, time.Now()); done || err != nil {
					return err
				}
			}
		case <-tick.C:
			if w.last != nil {
				if done, err := w.assess(w.last, time.Now()); done || err != nil {
					return err
				}
			}
		}
	}
}

// waiter keeps the state of one WaitRunning.
type waiter struct {
	pod       *Pod
	opts      WaitOptions
	last      *corev1.Pod
	lastPhase corev1.PodPhase
	since     map[string]time.Time // when a lingering problem was first seen
}

// assess reports whether the shim's container runs, or an error when it
// never will.
func (w *waiter) assess(pod *corev1.Pod, now time.Time) (bool, error) {
	w.last = pod
	name := pod.Namespace + "/" + pod.Name
	if pod.Status.Phase != w.lastPhase {
		w.lastPhase = pod.Status.Phase
		w.pod.logger().Info("pod phase", "pod", name, "phase", pod.Status.Phase)
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return false, fmt.Errorf("pod %s ended before the job could start: phase %s%s%s", name, pod.Status.Phase,
			message(strings.TrimSpace(pod.Status.Reason+" "+pod.Status.Message)), containerSummary(pod))
	}
	if pod.DeletionTimestamp != nil {
		return false, fmt.Errorf("pod %s is being deleted", name)
	}
	for _, c := range pod.Status.InitContainerStatuses {
		// Services run as restartable init containers: one that exits is
		// restarted by the kubelet and is not the shim's copy failing.
		if t := c.State.Terminated; t != nil && t.ExitCode != 0 && c.Name == InitContainer {
			return false, initFailure(pod, c)
		}
		if err := imageCopyFailure(pod, c); err != nil {
			return false, err
		}
	}
	if objs := w.pod.imageObjs; objs != nil {
		if err := imageVolumeFailure(objs.Pod, pod); err != nil {
			return false, err
		}
	}
	all := append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for _, c := range all {
		wt := c.State.Waiting
		if wt == nil {
			delete(w.since, "config/"+c.Name)
			continue
		}
		if imagePullFailures[wt.Reason] {
			return false, WaitingFailure(pod, c)
		}
		if configFailures[wt.Reason] {
			if w.lingers("config/"+c.Name, now, w.opts.ConfigErrorTimeout) {
				return false, WaitingFailure(pod, c)
			}
		} else {
			delete(w.since, "config/"+c.Name)
		}
	}
	unschedulable := false
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
			unschedulable = true
			if w.lingers("schedule", now, w.opts.ScheduleTimeout) {
				return false, fmt.Errorf("pod %s stayed unschedulable for %s: %s", name, w.opts.ScheduleTimeout, cond.Message)
			}
		}
	}
	if !unschedulable {
		delete(w.since, "schedule")
	}
	if pod.Status.Phase != corev1.PodRunning {
		return false, nil
	}
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name == w.pod.container() && c.State.Running != nil {
			return true, nil
		}
	}
	return false, nil
}

// lingers records when problem was first seen and reports whether it has
// lasted longer than limit.
func (w *waiter) lingers(problem string, now time.Time, limit time.Duration) bool {
	first, ok := w.since[problem]
	if !ok {
		w.since[problem] = now
		return false
	}
	return now.Sub(first) >= limit
}

// containerSummary describes terminated containers for an error message.
func containerSummary(pod *corev1.Pod) string {
	var b strings.Builder
	all := append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for _, c := range all {
		if t := c.State.Terminated; t != nil {
			fmt.Fprintf(&b, "; container %s exited with code %d (%s%s)", c.Name, t.ExitCode, t.Reason, message(strings.TrimSpace(t.Message)))
		}
	}
	return b.String()
}

// eventLog logs a pod's events, each repeat (same reason, container and
// message) once. The kubelet's events come before the pod's status catches
// up (by up to seconds), so two of them decide the wait: "Started" for the
// shim's container (attach can begin) and an image that cannot be pulled.
type eventLog struct {
	pod  *Pod
	seen map[string]bool
}

// see logs ev; it reports started for the shim container's Started event
// and an error for an image that cannot be pulled.
func (l *eventLog) see(ev *corev1.Event) (started bool, err error) {
	key := ev.Type + "\x00" + ev.Reason + "\x00" + ev.InvolvedObject.FieldPath + "\x00" + ev.Message
	if l.seen[key] {
		return false, nil
	}
	l.seen[key] = true
	p := l.pod
	attrs := []any{"pod", p.Namespace + "/" + p.Name, "reason", ev.Reason, "message", ev.Message}
	if ev.Type == corev1.EventTypeWarning {
		p.logger().Warn("pod event", attrs...)
	} else {
		p.logger().Info("pod event", attrs...)
	}
	if err := pullFailure(ev); err != nil {
		return false, err
	}
	return ev.Type == corev1.EventTypeNormal && ev.Reason == "Started" &&
		ev.InvolvedObject.FieldPath == "spec.containers{"+p.container()+"}", nil
}

// pullFailure returns an *ImagePullError when ev is the kubelet's report that an
// image cannot be pulled ("Failed" with "Error: ErrImagePull" and the like),
// with the message of the event before it that says why.
func pullFailure(ev *corev1.Event) error {
	if ev.Type != corev1.EventTypeWarning || ev.Reason != "Failed" {
		return nil
	}
	reason, ok := strings.CutPrefix(ev.Message, "Error: ")
	if !ok || !imagePullFailures[reason] {
		return nil
	}
	return &ImagePullError{Namespace: ev.InvolvedObject.Namespace, Pod: ev.InvolvedObject.Name,
		Container: containerOfField(ev.InvolvedObject.FieldPath), Reason: reason,
		fieldPath: ev.InvolvedObject.FieldPath, fromEvent: true}
}
