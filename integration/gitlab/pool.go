package gitlab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/gitlabpod"
)

// podShape is what the driver adds to every job pod (gitlabpod.Shape):
// its builds and cache volumes, the helper container, the pull policy.
func (f *Settings) podShape(getenv func(string) string) (gitlabpod.Shape, error) {
	sh := gitlabpod.Shape{BuildsDir: f.BuildsDir, CacheDir: f.CacheDir, PullPolicy: corev1.PullPolicy(f.PullPolicy)}
	helper, err := f.helperImage(getenv)
	if err != nil {
		return sh, err
	}
	if helper != "" {
		res, err := f.HelperResources.Requirements()
		if err != nil {
			return sh, fmt.Errorf("the driver config: %w", err)
		}
		sh.Helper = &kube.Helper{Image: helper, Resources: res}
	}
	return sh, nil
}

// claimWarm claims a warm pod of the pool setting for the job of spec
// (kube.Claim): the job's image, services and pod settings must be the
// pool's, or the job starts on a pod of its own. ok is false when no pod
// was claimed (why is logged at debug level, and recorded as an Event
// that `tether pool status` counts); the caller then creates the pod.
func claimWarm(ctx context.Context, cfg *Settings, pod *kube.Pod, spec kube.Spec, stdout io.Writer, log *slog.Logger) (*kube.Pod, bool, error) {
	claimed, err := kube.Claim(ctx, pod.Client, kube.ClaimRequest{Pool: cfg.Pool, Spec: spec, Logger: log})
	var miss *kube.MissError
	switch {
	case errors.As(err, &miss):
		log.Debug("no warm pod for the job: starting a pod of its own", "pool", cfg.Pool, "reason", string(miss.Reason), "err", miss.Err)
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	fmt.Fprintf(stdout, "tether: claimed warm pod %s/%s of pool %s (image %s)\n", claimed.Namespace, claimed.Name, cfg.Pool, spec.Image)
	return claimed, true, nil
}

// findClaimed points pod at the warm pod prepare claimed for the job,
// when the driver has a pool: the claimed pod carries the job's pod name
// in its job label (kube.LabelJob) and LabelWarm=claimed; without one,
// pod keeps the job's own pod name (prepare created it, or none exists).
func findClaimed(ctx context.Context, cfg *Settings, pod *kube.Pod) error {
	if cfg.Pool == "" {
		return nil
	}
	sel := labels.SelectorFromSet(labels.Set{kube.LabelJob: pod.Name, kube.LabelWarm: kube.WarmClaimed}).String()
	list, err := pod.Client.CoreV1().Pods(pod.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return fmt.Errorf("find the job's pod among pool %s's claimed pods: list pods of %s: %w%s", cfg.Pool, pod.Namespace, err, apiAdvice(err))
	}
	var found *corev1.Pod
	for i := range list.Items {
		if p := &list.Items[i]; found == nil || newerClaim(p, found) {
			found = p
		}
	}
	if found != nil {
		pod.Name = found.Name
	}
	return nil
}

// newerClaim reports whether p is the job's pod rather than q: one not
// being deleted (a retried prepare's), else the later claim.
func newerClaim(p, q *corev1.Pod) bool {
	if (p.DeletionTimestamp == nil) != (q.DeletionTimestamp == nil) {
		return p.DeletionTimestamp == nil
	}
	return p.Annotations[kube.AnnotationClaimedAt] > q.Annotations[kube.AnnotationClaimedAt]
}
