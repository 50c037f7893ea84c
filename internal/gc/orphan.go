package gc

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tether-ci/tether/internal/contract"
)

// ManagedByLabel and ManagedByValue mark every object Tether creates. The
// cleaner considers a ConfigMap or Secret only when it carries this label.
const (
	ManagedByLabel = contract.LabelManagedBy
	ManagedByValue = contract.ManagedByValue
)

// OrphanState is the outcome of applying the orphan rule to one labelled
// ConfigMap or Secret.
type OrphanState int

const (
	// NotManaged: the object lacks the Tether label; never touched.
	NotManaged OrphanState = iota
	// Young: the object is not older than the grace period; its owner
	// reference may still be on its way.
	Young
	// Owned: a live owner exists (a pod with the referenced name and UID,
	// or an owner of another kind, which the cleaner does not judge).
	Owned
	// Orphaned: no live owner and older than the grace period; deleted.
	Orphaned
)

// String names the state for reports.
func (s OrphanState) String() string {
	switch s {
	case NotManaged:
		return "not-managed"
	case Young:
		return "young"
	case Owned:
		return "owned"
	case Orphaned:
		return "orphaned"
	}
	return fmt.Sprintf("OrphanState(%d)", int(s))
}

// PodLiveness reports whether a pod named name with UID uid exists in
// namespace. found is false when no pod has that name or its UID differs.
type PodLiveness func(ctx context.Context, namespace, name string, uid types.UID) (found bool, err error)

// OrphanDecision is the result of DecideOrphan.
type OrphanDecision struct {
	State OrphanState
	// Age is now minus the creation time.
	Age time.Duration
	// Reason explains the state in a few words for reports.
	Reason string
}

// DecideOrphan applies the orphan rule to a ConfigMap's or Secret's metadata.
// An object is Orphaned when it carries the Tether label, is older than grace,
// has no owner reference of a kind other than Pod (those belong to someone
// else and the Kubernetes garbage collector handles them), and none of its
// Pod owner references names a live pod (same name and UID). Owner lookups
// happen only for objects older than grace.
func DecideOrphan(ctx context.Context, obj *metav1.ObjectMeta, grace time.Duration, now time.Time, alive PodLiveness) (OrphanDecision, error) {
	if obj.Labels[ManagedByLabel] != ManagedByValue {
		return OrphanDecision{State: NotManaged, Reason: "no " + ManagedByLabel + "=" + ManagedByValue + " label"}, nil
	}
	if obj.CreationTimestamp.IsZero() {
		return OrphanDecision{State: Young, Reason: "no creation timestamp; age unknown"}, nil
	}
	d := OrphanDecision{Age: now.Sub(obj.CreationTimestamp.Time)}
	if d.Age <= grace {
		d.State, d.Reason = Young, fmt.Sprintf("age %s within grace %s", roundDur(d.Age), grace)
		return d, nil
	}
	var pods []metav1.OwnerReference
	for _, ref := range obj.OwnerReferences {
		if !isPodRef(ref) {
			d.State, d.Reason = Owned, fmt.Sprintf("owned by %s %s (not a pod; left to the Kubernetes garbage collector)", ref.Kind, ref.Name)
			return d, nil
		}
		pods = append(pods, ref)
	}
	if len(pods) == 0 {
		d.State, d.Reason = Orphaned, fmt.Sprintf("no owner reference, age %s > grace %s", roundDur(d.Age), grace)
		return d, nil
	}
	var gone []string
	for _, ref := range pods {
		found, err := alive(ctx, obj.Namespace, ref.Name, ref.UID)
		if err != nil {
			return OrphanDecision{}, fmt.Errorf("check owner pod %s/%s of %s: %w", obj.Namespace, ref.Name, obj.Name, err)
		}
		if found {
			d.State, d.Reason = Owned, "owner pod "+ref.Name+" is alive"
			return d, nil
		}
		gone = append(gone, ref.Name)
	}
	d.State, d.Reason = Orphaned, fmt.Sprintf("owner pod %s gone (missing or recreated with another UID), age %s > grace %s",
		strings.Join(gone, ", "), roundDur(d.Age), grace)
	return d, nil
}

func isPodRef(ref metav1.OwnerReference) bool {
	return ref.Kind == "Pod" && ref.APIVersion == "v1"
}

func roundDur(d time.Duration) time.Duration {
	if d > time.Second || d < -time.Second {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}
