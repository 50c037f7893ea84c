package gc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// DryRun selects whether and how the cleaner deletes.
type DryRun string

// The dry-run modes.
const (
	// DryRunNone deletes.
	DryRunNone DryRun = ""
	// DryRunClient reports what would be deleted and sends no delete.
	DryRunClient DryRun = "client"
	// DryRunServer sends each delete with dryRun=All: the apiserver checks
	// permissions and preconditions but persists nothing.
	DryRunServer DryRun = "server"
)

// DefaultGrace is the default age below which an owner-less labelled
// ConfigMap or Secret is left alone: the runner may still be creating its pod.
const DefaultGrace = 10 * time.Minute

// DefaultChunkSize is the default page size of list calls.
const DefaultChunkSize = 100

// maxListRestarts bounds how often a paginated list restarts from the
// beginning after its continue token expired.
const maxListRestarts = 3

// Options configure a Cleaner.
type Options struct {
	// Namespaces to clean; one empty string means all namespaces. Required.
	Namespaces []string
	// Kinds to clean; empty means AllKinds.
	Kinds []Kind
	// Selector is an extra label selector ANDed to every list.
	Selector string
	// Grace is the minimum age of an orphaned ConfigMap or Secret before it
	// is deleted; 0 means DefaultGrace. Use a negative value for none.
	Grace time.Duration
	// DryRun selects dry-run mode.
	DryRun DryRun
	// ChunkSize is the list page size; 0 means DefaultChunkSize.
	ChunkSize int64
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Log receives diagnostics; nil discards them.
	Log *slog.Logger
}

// Cleaner deletes expired pods and orphaned Tether objects.
type Cleaner struct {
	store  Store
	report *Reporter
	opts   Options
}

// New validates opts and returns a Cleaner that reads and deletes through
// store and reports each action to report.
func New(store Store, report *Reporter, opts Options) (*Cleaner, error) {
	if len(opts.Namespaces) == 0 {
		return nil, errors.New("gc: no namespace given: pass a namespace or all namespaces")
	}
	for _, ns := range opts.Namespaces {
		if ns == metav1.NamespaceAll && len(opts.Namespaces) > 1 {
			return nil, errors.New("gc: all namespaces cannot be combined with named namespaces")
		}
	}
	if opts.Selector != "" {
		if _, err := labels.Parse(opts.Selector); err != nil {
			return nil, fmt.Errorf("gc: invalid label selector %q: %w", opts.Selector, err)
		}
	}
	switch opts.DryRun {
	case DryRunNone, DryRunClient, DryRunServer:
	default:
		return nil, fmt.Errorf("gc: unknown dry-run mode %q: want client or server", opts.DryRun)
	}
	if len(opts.Kinds) == 0 {
		opts.Kinds = AllKinds()
	}
	if opts.Grace == 0 {
		opts.Grace = DefaultGrace
	} else if opts.Grace < 0 {
		opts.Grace = 0
	}
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = DefaultChunkSize
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Cleaner{store: store, report: report, opts: opts}, nil
}

// Run makes one pass over every namespace and kind, reports each action and
// a summary, and returns the summary. The error is non-nil when any list or
// delete failed (the pass still continues past failures) or ctx ended.
func (c *Cleaner) Run(ctx context.Context) (Summary, error) {
	sum := Summary{DryRun: c.opts.DryRun != DryRunNone}
	for _, ns := range c.opts.Namespaces {
		// Pods seen alive in this namespace by the pod pass, by "ns/name".
		seen := map[string]types.UID{}
		// Pods the ended-pod pass counted as scanned, so the pod pass
		// counts each pod once.
		scanned := map[types.UID]bool{}
		if slices.Contains(c.opts.Kinds, KindPod) {
			if err := c.endedPass(ctx, ns, seen, scanned, &sum); err != nil && ctx.Err() == nil {
				sum.ListFailures++
				c.report.Event(Event{Time: c.opts.Now(), Action: ActionFailed, Kind: KindPod, Namespace: ns, Error: err.Error()})
			}
		}
		for _, kind := range c.opts.Kinds {
			if err := ctx.Err(); err != nil {
				c.report.Summary(c.opts.Now(), sum)
				return sum, fmt.Errorf("gc interrupted: %w", err)
			}
			if err := c.pass(ctx, kind, ns, seen, scanned, &sum); err != nil {
				if ctx.Err() != nil {
					continue // reported by the check above on the next turn or after the loop
				}
				sum.ListFailures++
				c.report.Event(Event{Time: c.opts.Now(), Action: ActionFailed, Kind: kind, Namespace: ns, Error: err.Error()})
			}
		}
	}
	c.report.Summary(c.opts.Now(), sum)
	if err := ctx.Err(); err != nil {
		return sum, fmt.Errorf("gc interrupted: %w", err)
	}
	if n := sum.Failed(); n > 0 {
		return sum, fmt.Errorf("gc: %d API call(s) failed; see the report lines marked failed", n)
	}
	return sum, nil
}

// pass lists one kind in one namespace page by page and handles each object
// before fetching the next page. scanned are the pods the ended-pod pass
// counted already.
func (c *Cleaner) pass(ctx context.Context, kind Kind, ns string, seen map[string]types.UID, scanned map[types.UID]bool, sum *Summary) error {
	selector := c.opts.Selector
	if kind != KindPod {
		selector = joinSelectors(ManagedByLabel+"="+ManagedByValue, selector)
	}
	opts := metav1.ListOptions{LabelSelector: selector, Limit: c.opts.ChunkSize}
	restarts := 0
	for {
		page, err := c.store.List(ctx, kind, ns, opts)
		if err != nil {
			if apierrors.IsResourceExpired(err) && opts.Continue != "" && restarts < maxListRestarts {
				// The continue token outlived etcd compaction: start over.
				// Objects already deleted are gone; the rest are judged again.
				restarts++
				c.opts.Log.Info("list continue token expired; restarting list", "kind", kind, "namespace", ns, "restart", restarts)
				opts.Continue = ""
				continue
			}
			return fmt.Errorf("list %s in namespace %q: %w", kind.Plural(), ns, err)
		}
		c.opts.Log.Debug("list page", "kind", kind, "namespace", ns, "items", len(page.Items), "continue", page.Continue != "")
		for i := range page.Items {
			if err := ctx.Err(); err != nil {
				return err
			}
			obj := &page.Items[i].ObjectMeta
			counts := sum.For(kind)
			if kind != KindPod || !scanned[obj.UID] {
				counts.Scanned++
			}
			if kind == KindPod {
				c.pod(ctx, obj, seen, counts)
			} else if err := c.orphan(ctx, kind, obj, seen, counts); err != nil {
				sum.ListFailures++
				c.report.Event(Event{Time: c.opts.Now(), Action: ActionFailed, Kind: kind,
					Namespace: obj.Namespace, Reason: "owner lookup for " + obj.Name, Error: err.Error()})
			}
		}
		if page.Continue == "" {
			return nil
		}
		opts.Continue = page.Continue
	}
}

func (c *Cleaner) pod(ctx context.Context, obj *metav1.ObjectMeta, seen map[string]types.UID, counts *KindCounts) {
	if obj.DeletionTimestamp != nil {
		return // already terminating; deleting again changes nothing
	}
	if uid, ok := seen[obj.Namespace+"/"+obj.Name]; ok && uid == "" {
		return // deleted by the ended-pod pass of this run
	}
	now := c.opts.Now()
	d := DecideTTL(obj.Annotations, obj.CreationTimestamp.Time, now)
	switch d.State {
	case Malformed:
		counts.Skipped++
		c.report.Event(Event{Time: now, Action: ActionSkipped, Kind: KindPod, Namespace: obj.Namespace,
			Name: obj.Name, UID: string(obj.UID), Reason: "annotation " + TTLAnnotation + " unusable; pod left alone",
			Error: d.Err.Error()})
		seen[obj.Namespace+"/"+obj.Name] = obj.UID
	case Expired:
		counts.Matched++
		age := d.Age.Seconds()
		c.delete(ctx, KindPod, obj, counts, Event{Time: now, TTLSeconds: &d.TTLSeconds, AgeSeconds: &age,
			Reason: fmt.Sprintf("ttl %ds expired %s ago", d.TTLSeconds, roundDur(d.Overdue))})
	default:
		seen[obj.Namespace+"/"+obj.Name] = obj.UID
	}
}

func (c *Cleaner) orphan(ctx context.Context, kind Kind, obj *metav1.ObjectMeta, seen map[string]types.UID, counts *KindCounts) error {
	now := c.opts.Now()
	d, err := DecideOrphan(ctx, obj, c.opts.Grace, now, func(ctx context.Context, ns, name string, uid types.UID) (bool, error) {
		if got, ok := seen[ns+"/"+name]; ok {
			// A UID never comes back, so a different UID at list time
			// means the referenced pod is gone for good.
			return got == uid, nil
		}
		pod, err := c.store.Get(ctx, KindPod, ns, name)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return pod.UID == uid, nil
	})
	if err != nil {
		return err
	}
	if d.State != Orphaned {
		return nil
	}
	counts.Matched++
	age := d.Age.Seconds()
	c.delete(ctx, kind, obj, counts, Event{Time: now, AgeSeconds: &age, Reason: d.Reason})
	return nil
}

// delete deletes obj with a UID precondition (or reports it in dry-run mode)
// and reports the outcome; ev carries the reason. It returns whether the
// object is deleted (or would be, in dry-run mode).
func (c *Cleaner) delete(ctx context.Context, kind Kind, obj *metav1.ObjectMeta, counts *KindCounts, ev Event) bool {
	ev.Kind, ev.Namespace, ev.Name, ev.UID = kind, obj.Namespace, obj.Name, string(obj.UID)
	ev.DryRun = c.opts.DryRun != DryRunNone
	if c.opts.DryRun == DryRunClient {
		ev.Action = ActionWouldDelete
		c.report.Event(ev)
		return true
	}
	uid := obj.UID
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
	if c.opts.DryRun == DryRunServer {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	err := c.store.Delete(ctx, kind, obj.Namespace, obj.Name, opts)
	switch {
	case err == nil && c.opts.DryRun == DryRunServer:
		ev.Action = ActionWouldDelete
	case err == nil:
		ev.Action = ActionDeleted
		counts.Deleted++
	case apierrors.IsNotFound(err):
		ev.Action = ActionGone
		ev.Reason = "already deleted"
		counts.Gone++
	case apierrors.IsConflict(err):
		ev.Action = ActionConflict
		ev.Reason = "name now belongs to another object (UID precondition failed); left alone"
		counts.Conflicts++
	default:
		ev.Action = ActionFailed
		ev.Error = err.Error()
		counts.Failed++
	}
	c.report.Event(ev)
	return ev.Action == ActionDeleted || ev.Action == ActionWouldDelete
}

func joinSelectors(a, b string) string {
	if b == "" {
		return a
	}
	return a + "," + b
}
