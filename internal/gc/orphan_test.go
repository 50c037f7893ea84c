package gc

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestDecideOrphan(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	grace := 10 * time.Minute
	tether := map[string]string{ManagedByLabel: ManagedByValue}
	podRef := func(name, uid string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: name, UID: types.UID(uid)}
	}
	// Live pods: name -> uid.
	live := map[string]types.UID{"runner-1": "uid-1", "runner-2": "uid-2-new"}
	alive := func(_ context.Context, ns, name string, uid types.UID) (bool, error) {
		if ns != "ci" {
			t.Errorf("owner looked up in namespace %q, want the object's namespace ci", ns)
		}
		if name == "broken" {
			return false, errors.New("apiserver unavailable")
		}
		got, ok := live[name]
		return ok && got == uid, nil
	}
	cases := []struct {
		name    string
		labels  map[string]string
		age     time.Duration
		refs    []metav1.OwnerReference
		want    OrphanState
		wantErr bool
	}{
		{"unlabelled, old, no owner", nil, time.Hour, nil, NotManaged, false},
		{"other managed-by value", map[string]string{ManagedByLabel: "helm"}, time.Hour, nil, NotManaged, false},
		{"labelled, old, no owner", tether, time.Hour, nil, Orphaned, false},
		{"labelled, young, no owner", tether, 5 * time.Minute, nil, Young, false},
		{"labelled, exactly grace old", tether, grace, nil, Young, false},
		{"labelled, just past grace", tether, grace + time.Second, nil, Orphaned, false},
		{"labelled, created in the future", tether, -time.Hour, nil, Young, false},
		{"owner pod alive", tether, time.Hour, []metav1.OwnerReference{podRef("runner-1", "uid-1")}, Owned, false},
		{"owner pod missing", tether, time.Hour, []metav1.OwnerReference{podRef("runner-9", "uid-9")}, Orphaned, false},
		{"owner pod recreated with another UID", tether, time.Hour, []metav1.OwnerReference{podRef("runner-2", "uid-2-old")}, Orphaned, false},
		{"one of two owner pods alive", tether, time.Hour, []metav1.OwnerReference{podRef("runner-9", "x"), podRef("runner-1", "uid-1")}, Owned, false},
		{"owned by a Job", tether, time.Hour, []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "j1"}}, Owned, false},
		{"Pod kind of another API group", tether, time.Hour, []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Pod", Name: "runner-9", UID: "u"}}, Owned, false},
		{"young with missing owner", tether, time.Minute, []metav1.OwnerReference{podRef("runner-9", "uid-9")}, Young, false},
		{"owner lookup fails", tether, time.Hour, []metav1.OwnerReference{podRef("broken", "b")}, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := &metav1.ObjectMeta{Name: "cm", Namespace: "ci", Labels: tc.labels, OwnerReferences: tc.refs,
				CreationTimestamp: metav1.NewTime(now.Add(-tc.age))}
			d, err := DecideOrphan(context.Background(), obj, grace, now, alive)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %+v, want an error", d)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.State != tc.want {
				t.Fatalf("state = %v (%s), want %v", d.State, d.Reason, tc.want)
			}
			if d.Reason == "" {
				t.Error("empty reason")
			}
		})
	}
}

// Owners are not looked up for objects inside the grace period or without
// the label: a young object costs no API call.
func TestDecideOrphanNoLookupWhenYoungOrUnlabelled(t *testing.T) {
	now := time.Now()
	calls := 0
	alive := func(context.Context, string, string, types.UID) (bool, error) { calls++; return false, nil }
	ref := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "u"}}
	young := &metav1.ObjectMeta{Labels: map[string]string{ManagedByLabel: ManagedByValue}, OwnerReferences: ref,
		CreationTimestamp: metav1.NewTime(now.Add(-time.Second))}
	plain := &metav1.ObjectMeta{OwnerReferences: ref, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}
	for _, obj := range []*metav1.ObjectMeta{young, plain} {
		if _, err := DecideOrphan(context.Background(), obj, time.Minute, now, alive); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 0 {
		t.Fatalf("%d owner lookups, want 0", calls)
	}
}
