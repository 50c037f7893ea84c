package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// deleteConflicts bounds how often Delete follows a pod of its name whose
// UID is not the one it knew (see Delete).
const deleteConflicts = 3

// Delete deletes the pod (its ConfigMap and Secret are garbage-collected
// with it). A pod that is already gone is not an error.
//
// Delete may run while WaitRunning replaces the pod (a signal handler's
// cleanup on another goroutine): from then on no replacement is created,
// and one whose create was sent already is waited for (up to ctx) and
// deleted. The delete names the pod's UID, so it never removes another
// pod of the same name; when the pod of that name has another UID (a
// replacement whose create reached the API server but whose answer did
// not reach WaitRunning, cancelled meanwhile), Delete deletes it if it is
// this job's (it carries the job's LabelJob value) and reports success if
// it is not (this job's pod is gone).
func (p *Pod) Delete(ctx context.Context) error {
	// A claimed pod's budget is made before the pod goes, so that it
	// never outlives it; an attach session nobody took is closed.
	_ = p.Protected(ctx)
	p.takeAttach().abandon()
	uid := p.stopReplacing(ctx)
	bg := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &bg}
	if p.DeleteGrace > 0 {
		g := seconds(p.DeleteGrace)
		opts.GracePeriodSeconds = &g
	}
	name := p.Namespace + "/" + p.Name
	for conflicts := 0; ; conflicts++ {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
		err := p.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, opts)
		if err == nil || apierrors.IsNotFound(err) {
			p.logger().Info("pod deleted", "pod", name)
			return nil
		}
		if !apierrors.IsConflict(err) || conflicts == deleteConflicts {
			return fmt.Errorf("delete pod %s: %w", name, err)
		}
		got, gerr := p.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(gerr) {
			p.logger().Info("pod deleted", "pod", name)
			return nil
		}
		if gerr != nil {
			return fmt.Errorf("delete pod %s: %w; reading the pod of that name failed too: %w", name, err, gerr)
		}
		if !p.owns(got) {
			if p.job == "" {
				return fmt.Errorf("delete pod %s: %w (the pod of that name has UID %s, and whether it is this job's is unknown)", name, err, got.UID)
			}
			p.logger().Info("the job's pod is gone; the pod of its name is another job's, left alone",
				"pod", name, "uid", got.UID, "job", got.Labels[LabelJob])
			return nil
		}
		p.logger().Info("deleting the job's pod under its new UID (a replacement the job did not see created)",
			"pod", name, "uid", got.UID, "was", uid)
		uid = got.UID
	}
}

// owns reports whether pod, of p's name, is this job's: p's UID, or the
// labels of a pod created for this job.
func (p *Pod) owns(pod *corev1.Pod) bool {
	if pod.UID == p.UID() {
		return true
	}
	return p.job != "" && pod.Labels[LabelManagedBy] == ManagedByValue && pod.Labels[LabelJob] == p.job
}

// stopReplacing makes any later replacement of the pod (see
// replaceWithFallback) give up before its create, waits (up to ctx) for
// the outcome of one whose create was sent already, and returns the pod's
// UID as it is then.
func (p *Pod) stopReplacing(ctx context.Context) types.UID {
	p.mu.Lock()
	p.deleting = true
	pending := p.replacing
	p.mu.Unlock()
	if pending != nil {
		select {
		case <-pending:
		case <-ctx.Done():
		}
	}
	return p.UID()
}

// beginReplacing reports whether a replacement may be created (Delete has
// not run) and, if so, marks its create under way until the returned
// function publishes its outcome: the new pod (nil when the create
// failed). The returned bool of that function reports whether Delete ran
// meanwhile, so the caller must not go on with the new pod.
func (p *Pod) beginReplacing() (finish func(np *Pod) (deleted bool), ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleting {
		return nil, false
	}
	done := make(chan struct{})
	p.replacing = done
	return func(np *Pod) bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		if np != nil {
			p.uid, p.created = np.uid, np.created
		}
		p.replacing = nil
		close(done)
		return p.deleting
	}, true
}

// DeleteByName deletes the pod that carries p's name now, whatever its
// UID (a Pod made from a name alone: a later command of the same job, a
// pod an earlier attempt left): it reads the pod, takes its UID and
// deletes it (see Delete). It returns the deleted pod's UID, "" when no
// pod has the name, which is no error.
func (p *Pod) DeleteByName(ctx context.Context) (types.UID, error) {
	got, err := p.Get(ctx)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	p.uid = got.UID
	p.mu.Unlock()
	if err := p.Delete(ctx); err != nil {
		return got.UID, err
	}
	return got.UID, nil
}
