package poolctl

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
	"github.com/tether-ci/tether/internal/contract"
)

// markReady makes a running starting pod idle (claimable) once its shim
// answered (kube.MarkWarmReady), in the background; the update reaches
// the informer and syncs the pool again. A pod already being marked is
// left to that.
func (l *leader) markReady(p *corev1.Pod) {
	l.mu.Lock()
	if l.marking[p.Name] {
		l.mu.Unlock()
		return
	}
	l.marking[p.Name] = true
	l.mu.Unlock()
	pod := p.DeepCopy()
	go func() {
		defer func() {
			l.mu.Lock()
			delete(l.marking, pod.Name)
			l.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(l.ctx, l.opts.ReadyTimeout)
		defer cancel()
		if _, err := kube.MarkWarmReady(ctx, clientset.Wrap(l.opts.Client), pod); err != nil {
			if l.ctx.Err() == nil {
				l.opts.Log.Info("a warm pod is not ready yet; looking again", "pool", pod.Labels[contract.LabelPool], "pod", pod.Name, "err", err)
				l.queue.AddRateLimited(pod.Labels[contract.LabelPool])
			}
		}
	}()
}
