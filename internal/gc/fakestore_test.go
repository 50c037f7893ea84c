package gc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// fakeStore is an in-memory Store that behaves like the apiserver where the
// cleaner depends on it: label selectors, Limit/Continue pagination over a
// stable order, NotFound, UID preconditions (Conflict) and server dry run.
type fakeStore struct {
	mu      sync.Mutex
	objs    map[Kind]map[string]metav1.PartialObjectMetadata // key "ns/name"
	lists   []metav1.ListOptions
	deletes []string // "kind ns/name"
	gets    int
	// beforeDelete runs (unlocked) before a delete is applied.
	beforeDelete func(kind Kind, ns, name string)
	// failDelete makes deletes of these "ns/name" keys fail with a 500.
	failDelete map[string]bool
	// expireContinueOnce makes the first List with a continue token fail
	// with 410 Gone (ResourceExpired).
	expireContinueOnce bool
	// failList makes lists of this kind fail.
	failList Kind
	// phase is each pod's status.phase by "ns/name" ("Running" when unset),
	// matched by field selectors.
	phase map[string]string
}

func newFakeStore() *fakeStore {
	return &fakeStore{objs: map[Kind]map[string]metav1.PartialObjectMetadata{}, failDelete: map[string]bool{}, phase: map[string]string{}}
}

func (f *fakeStore) add(kind Kind, m metav1.ObjectMeta) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.objs[kind] == nil {
		f.objs[kind] = map[string]metav1.PartialObjectMetadata{}
	}
	if m.UID == "" {
		m.UID = types.UID(fmt.Sprintf("uid-%s-%s-%s", kind, m.Namespace, m.Name))
	}
	f.objs[kind][m.Namespace+"/"+m.Name] = metav1.PartialObjectMetadata{ObjectMeta: m}
}

func (f *fakeStore) has(kind Kind, ns, name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.objs[kind][ns+"/"+name]
	return ok
}

func (f *fakeStore) names(kind Kind) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for k := range f.objs[kind] {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (f *fakeStore) List(_ context.Context, kind Kind, ns string, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists = append(f.lists, opts)
	if kind == f.failList {
		return nil, apierrors.NewForbidden(schema.GroupResource{Resource: kind.Plural()}, "", fmt.Errorf("denied"))
	}
	if opts.Continue != "" && f.expireContinueOnce {
		f.expireContinueOnce = false
		return nil, apierrors.NewResourceExpired("continue token too old")
	}
	sel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	fsel, err := fields.ParseSelector(opts.FieldSelector)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	var keys []string
	for k, o := range f.objs[kind] {
		phase := f.phase[k]
		if phase == "" {
			phase = "Running"
		}
		if !fsel.Matches(fields.Set{"status.phase": phase}) {
			continue
		}
		if (ns == "" || o.Namespace == ns) && sel.Matches(labels.Set(o.Labels)) && k > opts.Continue {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := &metav1.PartialObjectMetadataList{}
	if opts.Limit > 0 && int64(len(keys)) > opts.Limit {
		keys = keys[:opts.Limit]
		out.Continue = keys[len(keys)-1]
	}
	for _, k := range keys {
		out.Items = append(out.Items, f.objs[kind][k])
	}
	return out, nil
}

func (f *fakeStore) Get(_ context.Context, kind Kind, ns, name string) (*metav1.PartialObjectMetadata, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	o, ok := f.objs[kind][ns+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: kind.Plural()}, name)
	}
	return &o, nil
}

func (f *fakeStore) Delete(_ context.Context, kind Kind, ns, name string, opts metav1.DeleteOptions) error {
	if f.beforeDelete != nil {
		f.beforeDelete(kind, ns, name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	key := ns + "/" + name
	f.deletes = append(f.deletes, string(kind)+" "+key)
	if f.failDelete[key] {
		return apierrors.NewInternalError(fmt.Errorf("etcd timeout"))
	}
	o, ok := f.objs[kind][key]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: kind.Plural()}, name)
	}
	if p := opts.Preconditions; p != nil && p.UID != nil && *p.UID != o.UID {
		return apierrors.NewConflict(schema.GroupResource{Resource: kind.Plural()}, name,
			fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", *p.UID, o.UID))
	}
	if slices.Contains(opts.DryRun, metav1.DryRunAll) {
		return nil
	}
	delete(f.objs[kind], key)
	return nil
}

func (f *fakeStore) deleteCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.deletes)
}

func joinLines(s []string) string { return strings.Join(s, "\n") }
