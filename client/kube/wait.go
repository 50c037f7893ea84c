package kube

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
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

// imagePullFailures are waiting reasons that end the wait at once.
var imagePullFailures = map[string]bool{
	"ErrImagePull":      true,
	"ImagePullBackOff":  true,
	"InvalidImageName":  true,
	"ErrImageNeverPull": true,
}

// configFailures are waiting reasons that end the wait once they persist.
var configFailures = map[string]bool{
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
}

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
func (p *Pod) WaitRunning(ctx context.Context, opts WaitOptions) error {
	opts = opts.withDefaults()
	ctx, cancel := context.WithTimeoutCause(ctx, opts.Timeout,
		fmt.Errorf("pod %s/%s did not start within %s", p.Namespace, p.Name, opts.Timeout))
	defer cancel()

	evCtx, stopEvents := context.WithCancel(ctx)
	eventsDone := make(chan struct{})
	verdict := make(chan error, 1)
	go func() {
		defer close(eventsDone)
		p.followEvents(evCtx, verdict)
	}()
	defer func() {
		stopEvents()
		<-eventsDone
	}()

	w := &waiter{pod: p, opts: opts, since: map[string]time.Time{}, verdict: verdict}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		cur, err := p.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("pod %s/%s was deleted while starting", p.Namespace, p.Name)
		}
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			p.logger().Warn("reading the pod failed; retrying", "err", err)
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(time.Second):
			}
			continue
		}
		if done, err := w.assess(cur, time.Now()); done || err != nil {
			return err
		}
		select {
		case err := <-verdict:
			return err
		default:
		}
		watcher, err := p.Client.CoreV1().Pods(p.Namespace).Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", p.Name).String(),
			ResourceVersion: cur.ResourceVersion,
		})
		if err != nil {
			p.logger().Debug("watching the pod failed; retrying", "err", err)
			continue
		}
		done, err := w.follow(ctx, watcher, tick.C)
		watcher.Stop()
		if done || err != nil {
			return err
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
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
	verdict   <-chan error         // what the pod's events reveal before its status does: nil started, else failed
}

// follow assesses the pod on every watch event and tick. It returns
// (false, nil) when the watch ended and should be restarted.
func (w *waiter) follow(ctx context.Context, watcher watch.Interface, tick <-chan time.Time) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return false, context.Cause(ctx)
		case err := <-w.verdict:
			return err == nil, err
		case <-tick:
			if w.last != nil {
				if done, err := w.assess(w.last, time.Now()); done || err != nil {
					return done, err
				}
			}
		case ev, ok := <-watcher.ResultChan():
			if !ok {
				return false, nil
			}
			switch ev.Type {
			case watch.Deleted:
				return false, fmt.Errorf("pod %s/%s was deleted while starting", w.pod.Namespace, w.pod.Name)
			case watch.Error:
				return false, nil
			}
			cur, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				continue
			}
			if done, err := w.assess(cur, time.Now()); done || err != nil {
				return done, err
			}
		}
	}
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
		if t := c.State.Terminated; t != nil && t.ExitCode != 0 {
			return false, fmt.Errorf("init container %s of pod %s failed with exit code %d (%s%s): does image %s carry /tether-shim?",
				c.Name, name, t.ExitCode, t.Reason, message(t.Message), c.Image)
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
			return false, fmt.Errorf("image %s of container %s cannot be pulled: %s%s", c.Image, c.Name, wt.Reason, message(wt.Message))
		}
		if configFailures[wt.Reason] {
			if w.lingers("config/"+c.Name, now, w.opts.ConfigErrorTimeout) {
				return false, fmt.Errorf("container %s of pod %s cannot be created: %s%s", c.Name, name, wt.Reason, message(wt.Message))
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

// followEvents logs the pod's events until ctx ends. The kubelet's events
// come before the pod's status catches up (by up to seconds), so two of
// them decide the wait: "Started" for the shim's container sends nil to
// verdict (attach can begin), an image that cannot be pulled sends the
// error.
func (p *Pod) followEvents(ctx context.Context, verdict chan<- error) {
	sel := fields.Set{"involvedObject.name": p.Name, "involvedObject.kind": "Pod"}
	if p.UID != "" {
		sel["involvedObject.uid"] = string(p.UID)
	}
	opts := metav1.ListOptions{FieldSelector: sel.AsSelector().String()}
	seen := map[string]bool{} // repeats of an event (same reason, container and message) are logged once
	log := func(ev *corev1.Event) {
		key := ev.Type + "\x00" + ev.Reason + "\x00" + ev.InvolvedObject.FieldPath + "\x00" + ev.Message
		if seen[key] {
			return
		}
		seen[key] = true
		if err := pullFailure(ev); err != nil {
			select {
			case verdict <- err:
			default:
			}
		}
		if ev.Type == corev1.EventTypeNormal && ev.Reason == "Started" &&
			ev.InvolvedObject.FieldPath == "spec.containers{"+p.container()+"}" {
			select {
			case verdict <- nil:
			default:
			}
		}
		attrs := []any{"pod", p.Namespace + "/" + p.Name, "reason", ev.Reason, "message", ev.Message}
		if ev.Type == corev1.EventTypeWarning {
			p.logger().Warn("pod event", attrs...)
		} else {
			p.logger().Info("pod event", attrs...)
		}
	}
	for ctx.Err() == nil {
		list, err := p.Client.CoreV1().Events(p.Namespace).List(ctx, opts)
		if err != nil {
			if !sleepCtx(ctx, time.Second) {
				return
			}
			continue
		}
		for i := range list.Items {
			log(&list.Items[i])
		}
		wopts := opts
		wopts.ResourceVersion = list.ResourceVersion
		watcher, err := p.Client.CoreV1().Events(p.Namespace).Watch(ctx, wopts)
		if err != nil {
			if !sleepCtx(ctx, time.Second) {
				return
			}
			continue
		}
		followWatch(ctx, watcher, func(ev watch.Event) {
			if e, ok := ev.Object.(*corev1.Event); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				log(e)
			}
		})
	}
}

// pullFailure returns an error when ev is the kubelet's report that an
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
	what := "an image"
	if ev.InvolvedObject.FieldPath != "" {
		what = "the image of " + ev.InvolvedObject.FieldPath
	}
	return fmt.Errorf("%s of pod %s/%s cannot be pulled: %s (the pod's events above say why)",
		what, ev.InvolvedObject.Namespace, ev.InvolvedObject.Name, reason)
}

// followWatch calls fn for each event until the watch or ctx ends, then
// stops the watch.
func followWatch(ctx context.Context, w watch.Interface, fn func(watch.Event)) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			fn(ev)
		}
	}
}

// sleepCtx sleeps d and reports whether ctx is still alive.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
