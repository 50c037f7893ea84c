package poolctl

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
	"github.com/tether-ci/tether/internal/contract"
)

// Reasons of the controller's Events and of its delete and failure
// metrics.
const (
	ReasonCreated         = "WarmPodCreated"
	ReasonFailedCreate    = "FailedCreate"
	ReasonFailedStart     = "FailedStart"
	ReasonSettingsChanged = "SettingsChanged"
	ReasonMaxIdle         = "MaxIdle"
	ReasonPoolRemoved     = "PoolRemoved"
	ReasonEnded           = "Ended"
	ReasonSurplus         = "Surplus"
)

// brokenReasons are the waiting reasons of a container that will not
// start without a change: the pod is replaced, with a back-off.
var brokenReasons = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
	"CreateContainerConfigError", "CreateContainerError", "CrashLoopBackOff"}

// sync brings the pool named name to its size: it deletes the pool's
// unclaimed pods that must go, creates the missing ones (unless backing
// off) and marks running ones idle. It returns when to look again (0:
// when the informer says something changed).
func (l *leader) sync(ctx context.Context, name string) (time.Duration, error) {
	if name == "" {
		return 0, nil
	}
	cfg := l.pools.get(name)
	pods, err := l.lister.Pods(l.opts.Namespace).List(labels.SelectorFromSet(labels.Set{contract.LabelPool: name}))
	if err != nil {
		return 0, fmt.Errorf("list the pool's pods from the cache: %w", err)
	}
	now := l.opts.Now()
	var keep []*corev1.Pod
	claimed := 0
	again := time.Duration(0)
	later := func(d time.Duration) {
		if d > 0 && (again == 0 || d < again) {
			again = d
		}
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil || l.exp.isDeleting(p.UID) {
			continue
		}
		if p.Labels[contract.LabelWarm] == contract.WarmClaimed {
			claimed++ // a job's: never touched
			continue
		}
		reason, message := "", ""
		switch {
		case cfg == nil:
			reason, message = ReasonPoolRemoved, fmt.Sprintf("pool %s is no longer in the pools file", name)
		case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
			reason, message = ReasonEnded, fmt.Sprintf("the warm pod ended (%s) before a job claimed it", p.Status.Phase)
		case p.Labels[contract.LabelPoolHash] != cfg.hash:
			reason, message = ReasonSettingsChanged, fmt.Sprintf("pool %s's settings changed (hash %s, the pod's %s)", name, cfg.hash, p.Labels[contract.LabelPoolHash])
		case now.Sub(p.CreationTimestamp.Time) >= cfg.MaxIdle:
			reason, message = ReasonMaxIdle, fmt.Sprintf("the warm pod waited longer than max-idle %s", cfg.MaxIdle)
		default:
			if why := broken(p); why != "" {
				reason, message = ReasonFailedStart, "the warm pod cannot start: "+why
				l.failed(name, ReasonFailedStart, fmt.Sprintf("pool %s: warm pod %s cannot start: %s", name, p.Name, why))
			}
		}
		if reason != "" {
			if err := l.deletePod(ctx, name, p, reason, message); err != nil {
				return 0, err
			}
			continue
		}
		keep = append(keep, p)
		later(p.CreationTimestamp.Add(cfg.MaxIdle).Sub(now))
	}
	if cfg == nil {
		l.metrics.forgetPool(name)
		return 0, nil
	}
	have := len(keep) + l.exp.pendingCreates(name)
	if have > cfg.Size {
		// Surplus (the size went down): starting pods first, newest first.
		slices.SortFunc(keep, func(a, b *corev1.Pod) int {
			if sa, sb := a.Labels[contract.LabelWarm] == contract.WarmIdle, b.Labels[contract.LabelWarm] == contract.WarmIdle; sa != sb {
				if sa {
					return 1
				}
				return -1
			}
			return b.CreationTimestamp.Compare(a.CreationTimestamp.Time)
		})
		n := min(have-cfg.Size, len(keep))
		for _, p := range keep[:n] {
			if err := l.deletePod(ctx, name, p, ReasonSurplus, fmt.Sprintf("pool %s has more than its size %d of unclaimed pods", name, cfg.Size)); err != nil {
				return 0, err
			}
		}
		keep = keep[n:]
	}
	starting, idle := 0, 0
	for _, p := range keep {
		if p.Labels[contract.LabelWarm] == contract.WarmIdle {
			idle++
			continue
		}
		starting++
		if p.Status.Phase == corev1.PodRunning {
			l.markReady(p)
		}
	}
	if missing := cfg.Size - have; missing > 0 {
		if wait := l.backoff(name).wait(now); wait > 0 {
			later(wait)
		} else {
			for range missing {
				if err := l.create(ctx, cfg); err != nil {
					later(l.failed(name, ReasonFailedCreate, fmt.Sprintf("pool %s: cannot create a warm pod: %v", name, err)))
					break
				}
				starting++
			}
		}
	}
	l.metrics.setPods(name, starting, idle, claimed)
	return again, nil
}

// create creates one warm pod of cfg's pool, counted as expected until
// the informer shows it.
func (l *leader) create(ctx context.Context, cfg *poolConfig) error {
	objs, err := cfg.WarmPod(cfg.spec)
	if err != nil {
		return err
	}
	l.exp.expectCreate(cfg.Name, objs.Pod.Name)
	pod, err := kube.Create(ctx, clientset.Wrap(l.opts.Client), objs, l.opts.Log)
	if err != nil {
		l.exp.created(cfg.Name, objs.Pod.Name)
		return err
	}
	l.backoff(cfg.Name).succeed()
	l.metrics.Creates.WithLabelValues(cfg.Name).Inc()
	l.opts.Log.Info("created a warm pod", "pool", cfg.Name, "pod", pod.Name)
	l.recorder.AnnotatedEventf(podRef(pod.Namespace, pod.Name, pod.UID()), map[string]string{contract.LabelPool: cfg.Name},
		corev1.EventTypeNormal, ReasonCreated, "warm pod of pool %s (settings %s)", cfg.Name, cfg.hash)
	return nil
}

// deletePod deletes an unclaimed pod of the pool, only if it is still the
// pod the cache shows (its UID and resourceVersion): a pod claimed
// meanwhile is left alone.
func (l *leader) deletePod(ctx context.Context, name string, p *corev1.Pod, reason, message string) error {
	l.exp.expectDelete(p.UID)
	err := l.opts.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &p.UID, ResourceVersion: &p.ResourceVersion},
	})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		l.exp.deleted(p.UID)
		l.opts.Log.Info("a warm pod changed before its delete; looking again", "pool", name, "pod", p.Name)
		l.queue.Add(name)
		return nil
	case err != nil:
		l.exp.deleted(p.UID)
		return fmt.Errorf("delete warm pod %s (%s): %w", p.Name, reason, err)
	}
	l.metrics.Deletes.WithLabelValues(name, reason).Inc()
	l.opts.Log.Info("deleted a warm pod", "pool", name, "pod", p.Name, "reason", reason, "why", message)
	l.recorder.AnnotatedEventf(p, map[string]string{contract.LabelPool: name}, corev1.EventTypeNormal, reason, "deleted: %s", message)
	return nil
}

// backoff returns the pool's back-off.
func (l *leader) backoff(name string) *backoff {
	b := l.backoffs[name]
	if b == nil {
		b = &backoff{}
		l.backoffs[name] = b
	}
	return b
}

// failed records a failure to create or start a pod of the pool: the
// metric, a Warning Event on the Lease, the log; it returns the back-off.
func (l *leader) failed(name, reason, message string) time.Duration {
	wait := l.backoff(name).fail(l.opts.Now(), l.opts.BackoffBase, l.opts.BackoffMax)
	l.metrics.CreateFailures.WithLabelValues(name, reason).Inc()
	l.opts.Log.Warn("backing off", "pool", name, "reason", reason, "err", message, "retry_in", wait)
	l.recorder.AnnotatedEventf(l.lease, map[string]string{contract.LabelPool: name}, corev1.EventTypeWarning, reason,
		"%s (next try in %s)", message, wait.Round(time.Second))
	return wait
}

// broken says why a pod's container cannot start, or "".
func broken(p *corev1.Pod) string {
	for _, st := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
		if w := st.State.Waiting; w != nil && slices.Contains(brokenReasons, w.Reason) {
			return fmt.Sprintf("container %s: %s: %s", st.Name, w.Reason, w.Message)
		}
	}
	return ""
}
