package gc

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// EndedPodsFieldSelector selects pods whose phase is Succeeded or Failed:
// every container has terminated and none will be restarted.
const EndedPodsFieldSelector = "status.phase!=Pending,status.phase!=Running,status.phase!=Unknown"

// endedPass deletes Tether's pods (labelled ManagedByLabel=ManagedByValue)
// that have ended and are older than the grace period, whatever their TTL.
// Pods it deletes are recorded in seen with an empty UID, so their
// ConfigMaps and Secrets count as orphaned in the same run. Every pod it
// looks at counts as scanned, once: it is recorded in scanned for the pod
// pass, which lists it again if it still exists.
func (c *Cleaner) endedPass(ctx context.Context, ns string, seen map[string]types.UID, scanned map[types.UID]bool, sum *Summary) error {
	opts := metav1.ListOptions{
		LabelSelector: joinSelectors(ManagedByLabel+"="+ManagedByValue, c.opts.Selector),
		FieldSelector: EndedPodsFieldSelector,
		Limit:         c.opts.ChunkSize,
	}
	restarts := 0
	for {
		page, err := c.store.List(ctx, KindPod, ns, opts)
		if err != nil {
			if apierrors.IsResourceExpired(err) && opts.Continue != "" && restarts < maxListRestarts {
				restarts++
				opts.Continue = ""
				continue
			}
			return fmt.Errorf("list ended pods in namespace %q: %w", ns, err)
		}
		for i := range page.Items {
			if err := ctx.Err(); err != nil {
				return err
			}
			obj := &page.Items[i].ObjectMeta
			if !scanned[obj.UID] {
				scanned[obj.UID] = true
				sum.Pods.Scanned++
			}
			if obj.DeletionTimestamp != nil || obj.CreationTimestamp.IsZero() {
				continue
			}
			now := c.opts.Now()
			age := now.Sub(obj.CreationTimestamp.Time)
			if age < c.opts.Grace {
				continue
			}
			counts := &sum.Pods
			counts.Matched++
			secs := age.Seconds()
			if c.delete(ctx, KindPod, obj, counts, Event{Time: now, AgeSeconds: &secs,
				Reason: fmt.Sprintf("pod ended (Succeeded or Failed), created %s ago", roundDur(age))}) {
				seen[obj.Namespace+"/"+obj.Name] = ""
			}
		}
		if page.Continue == "" {
			return nil
		}
		opts.Continue = page.Continue
	}
}
