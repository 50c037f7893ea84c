// Package ephemeral follows an ephemeral container of a running pod (a
// container step of the job's pod) until its program can run: the
// kubelet's status of it, read from the API server, and what ends the
// wait (it runs; it ended, cannot start, or its pod ended or is gone).
package ephemeral

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi"
)

// Poll is how often WaitRunning reads the pod.
const Poll = 200 * time.Millisecond

// ConfigGrace is how long the step's container may fail to be created
// (CreateContainerConfigError, CreateContainerError, RunContainerError)
// before the wait gives up, as for a pod's own containers
// (kube.DefaultConfigErrorTimeout): the kubelet retries, and its first
// tries can miss the step's just created Secret ("failed to sync secret
// cache").
const ConfigGrace = kube.DefaultConfigErrorTimeout

// WaitRunning waits until the ephemeral container name of the pod
// namespace/pod runs. A container that ended or cannot start
// (kube.FatalWaiting; a container that cannot be created once that
// persisted for ConfigGrace), a pod that ended or is gone, or a pod that
// cannot be read for budget, is an error; so is ctx's end.
func WaitRunning(ctx context.Context, pods kubeapi.PodsGetter, namespace, pod, name string, budget time.Duration) error {
	return waitRunning(ctx, pods, namespace, pod, name, budget, ConfigGrace)
}

// waitRunning is WaitRunning with the grace of a container that cannot be
// created.
func waitRunning(ctx context.Context, pods kubeapi.PodsGetter, namespace, pod, name string, budget, configGrace time.Duration) error {
	lastOK := time.Now()
	var configSince time.Time // when the container began to fail to be created
	var failed error
	err := wait.PollUntilContextCancel(ctx, Poll, true, func(ctx context.Context) (bool, error) {
		p, err := pods.Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			failed = fmt.Errorf("the job's pod %s/%s is gone", namespace, pod)
			return true, nil
		case err != nil:
			if time.Since(lastOK) > budget {
				failed = fmt.Errorf("the job's pod %s/%s could not be read for %v: %w", namespace, pod, budget, err)
				return true, nil
			}
			return false, nil
		}
		lastOK = time.Now()
		failed = started(p, name)
		if cw := (*configWaiting)(nil); errors.As(failed, &cw) {
			if configSince.IsZero() {
				configSince = time.Now()
			}
			if time.Since(configSince) < configGrace {
				return false, nil
			}
		} else {
			configSince = time.Time{}
		}
		return failed != errNotYet, nil
	})
	switch {
	case err != nil:
		return fmt.Errorf("cancelled while its container started: %w", context.Cause(ctx))
	case failed != nil:
		return failed
	}
	return nil
}

// errNotYet is started's answer while the container is yet to run.
var errNotYet = errors.New("not yet")

// started says whether the ephemeral container name of p runs (nil), will
// never run (an error saying why) or may run later (errNotYet).
func started(p *corev1.Pod, name string) error {
	cs := Status(p, name)
	switch {
	case cs != nil && cs.State.Running != nil:
		return nil
	case cs != nil && cs.State.Terminated != nil:
		t := cs.State.Terminated
		return fmt.Errorf("the step's container (image %s) ended as it started, before its program ran: exit code %d, %s: %s", cs.Image, t.ExitCode, t.Reason, t.Message)
	case cs != nil && cs.State.Waiting != nil && kube.FatalWaiting(cs.State.Waiting.Reason):
		err := fmt.Errorf("the step's container (image %s) cannot start: %s: %s", cs.Image, cs.State.Waiting.Reason, cs.State.Waiting.Message)
		if we := (*kube.WaitingError)(nil); errors.As(kube.WaitingFailure(p, *cs), &we) {
			return &configWaiting{err}
		}
		return err
	case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		return fmt.Errorf("the job's pod %s/%s ended (%s) before the step's container ran", p.Namespace, p.Name, p.Status.Phase)
	}
	return errNotYet
}

// configWaiting is started's answer while the container cannot be created
// (the kubelet retries it).
type configWaiting struct{ err error }

func (c *configWaiting) Error() string { return c.err.Error() }

// Status is the status of the pod's ephemeral container name, nil when
// the kubelet reported none yet.
func Status(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range p.Status.EphemeralContainerStatuses {
		if p.Status.EphemeralContainerStatuses[i].Name == name {
			return &p.Status.EphemeralContainerStatuses[i]
		}
	}
	return nil
}
