package poolctl

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/tether-ci/tether/internal/contract"
)

// watchMisses counts the misses the claimers record (Events of reason
// contract.EventWarmMiss in the namespace, client/kube's MissEvent) into
// the Misses metric, by pool and reason, until ctx ends: those that
// happened since since (a new leader does not count its predecessor's
// again). It returns at once.
func (l *leader) watchMisses(ctx context.Context, since time.Time) error {
	factory := informers.NewSharedInformerFactoryWithOptions(l.opts.Client, 0, informers.WithNamespace(l.opts.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = "reason=" + contract.EventWarmMiss
		}))
	inf := factory.Core().V1().Events().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if e, ok := obj.(*corev1.Event); ok {
			l.countMiss(e, since)
		}
	}}); err != nil {
		return fmt.Errorf("watch the pools' misses: %w", err)
	}
	// Not waited for: the pools are kept whether or not the Events can be
	// read (a Role without list on events only leaves the metric at 0).
	factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		factory.Shutdown()
	}()
	return nil
}

// countMiss adds a miss Event that happened since since to the metric.
func (l *leader) countMiss(e *corev1.Event, since time.Time) {
	pool := e.Annotations[contract.LabelPool]
	if e.Reason != contract.EventWarmMiss || pool == "" || eventTime(e).Before(since) {
		return
	}
	l.metrics.Misses.WithLabelValues(pool, cmpOr(e.Annotations[contract.AnnotationMissReason], "unknown")).Add(float64(max(e.Count, 1)))
}
