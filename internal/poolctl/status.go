package poolctl

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tether-ci/tether/internal/contract"
)

// StatusWindow is how far back Status counts claims and misses.
const StatusWindow = time.Hour

// PoolStatus is one pool as `tether pool status` shows it.
type PoolStatus struct {
	// Name is the pool's; Size its size when the pools file was given
	// (-1: not known).
	Name string
	Size int
	// Ready (idle: claimable), Starting and Claimed count its pods now
	// (terminating ones left out).
	Ready, Starting, Claimed int
	// Claims and Misses (by reason) count the Events of the last
	// StatusWindow.
	Claims int
	Misses map[string]int
}

// Status reads the pools' pods and Events in ns: every pool a pod or an
// Event names, and every pool of sizes (name → size, from the pools file;
// may be nil). The result is sorted by name.
func Status(ctx context.Context, cs kubernetes.Interface, ns string, sizes map[string]int, now time.Time) ([]PoolStatus, error) {
	byName := map[string]*PoolStatus{}
	get := func(name string) *PoolStatus {
		s := byName[name]
		if s == nil {
			s = &PoolStatus{Name: name, Size: -1, Misses: map[string]int{}}
			byName[name] = s
		}
		return s
	}
	for name, size := range sizes {
		get(name).Size = size
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelPool})
	if err != nil {
		return nil, fmt.Errorf("list the warm pods of %s: %w", ns, err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		s := get(p.Labels[contract.LabelPool])
		switch p.Labels[contract.LabelWarm] {
		case contract.WarmIdle:
			s.Ready++
		case contract.WarmClaimed:
			s.Claimed++
		default:
			s.Starting++
		}
	}
	for _, reason := range []string{contract.EventWarmClaimed, contract.EventWarmMiss} {
		events, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
		if err != nil {
			return nil, fmt.Errorf("list the %s Events of %s: %w", reason, ns, err)
		}
		for _, e := range events.Items {
			name := e.Annotations[contract.LabelPool]
			if name == "" || now.Sub(eventTime(&e)) > StatusWindow {
				continue
			}
			n := int(max(e.Count, 1))
			s := get(name)
			if reason == contract.EventWarmClaimed {
				s.Claims += n
			} else {
				s.Misses[cmpOr(e.Annotations[contract.AnnotationMissReason], "unknown")] += n
			}
		}
	}
	var out []PoolStatus
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, *byName[name])
	}
	return out, nil
}

// eventTime is when an Event last happened.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
