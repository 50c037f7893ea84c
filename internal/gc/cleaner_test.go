package gc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var testNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func pod(ns, name string, age time.Duration, ttl *string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(testNow.Add(-age))}
	if ttl != nil {
		m.Annotations = map[string]string{TTLAnnotation: *ttl}
	}
	return m
}

func owned(ns, name string, age time.Duration, owner *metav1.ObjectMeta) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(testNow.Add(-age)),
		Labels: map[string]string{ManagedByLabel: ManagedByValue, "tether.dev/job": name}}
	if owner != nil {
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: owner.Name, UID: owner.UID}}
	}
	return m
}

func ptr[T any](v T) *T { return &v }

func run(t *testing.T, store Store, opts Options, format Format) (Summary, string, error) {
	t.Helper()
	var out bytes.Buffer
	if opts.Now == nil {
		opts.Now = func() time.Time { return testNow }
	}
	c, err := New(store, NewReporter(&out, format), opts)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := c.Run(context.Background())
	return sum, out.String(), err
}

// The main rule set: exactly the expired pods and the old owner-less
// labelled objects of the given namespace go; everything else stays.
func TestCleanerDeletesExactlyTheRightObjects(t *testing.T) {
	f := newFakeStore()
	f.add(KindPod, pod("ci", "expired-running", 2*time.Hour, ptr("3600")))
	f.add(KindPod, pod("ci", "expired-ttl0", time.Second, ptr("0")))
	f.add(KindPod, pod("ci", "young", 10*time.Minute, ptr("3600")))
	f.add(KindPod, pod("ci", "no-annotation", 1000*time.Hour, nil))
	f.add(KindPod, pod("ci", "malformed-abc", 1000*time.Hour, ptr("abc")))
	f.add(KindPod, pod("ci", "malformed-negative", 1000*time.Hour, ptr("-5")))
	f.add(KindPod, pod("ci", "malformed-empty", 1000*time.Hour, ptr("")))
	f.add(KindPod, pod("ci", "future", -time.Hour, ptr("1")))
	terminating := pod("ci", "terminating", 2*time.Hour, ptr("1"))
	terminating.DeletionTimestamp = ptr(metav1.NewTime(testNow))
	f.add(KindPod, terminating)
	f.add(KindPod, pod("other", "expired-elsewhere", 2*time.Hour, ptr("1")))

	livePod, _ := f.Get(context.Background(), KindPod, "ci", "young")
	goneOwner := metav1.ObjectMeta{Name: "deleted-runner", UID: "uid-gone"}
	recreatedOwner := metav1.ObjectMeta{Name: "no-annotation", UID: "uid-old-incarnation"}
	f.add(KindConfigMap, owned("ci", "cm-no-owner-old", time.Hour, nil))
	f.add(KindConfigMap, owned("ci", "cm-no-owner-young", time.Minute, nil))
	f.add(KindConfigMap, owned("ci", "cm-live-owner", time.Hour, &livePod.ObjectMeta))
	f.add(KindConfigMap, owned("ci", "cm-gone-owner", time.Hour, &goneOwner))
	f.add(KindConfigMap, owned("ci", "cm-recreated-owner", time.Hour, &recreatedOwner))
	f.add(KindConfigMap, metav1.ObjectMeta{Namespace: "ci", Name: "user-cm", CreationTimestamp: metav1.NewTime(testNow.Add(-time.Hour))})
	f.add(KindConfigMap, owned("other", "cm-elsewhere", time.Hour, nil))
	f.add(KindSecret, owned("ci", "secret-no-owner-old", time.Hour, nil))
	f.add(KindSecret, owned("ci", "secret-live-owner", time.Hour, &livePod.ObjectMeta))
	f.add(KindSecret, metav1.ObjectMeta{Namespace: "ci", Name: "user-secret", CreationTimestamp: metav1.NewTime(testNow.Add(-time.Hour))})

	f.gets = 0 // count only the cleaner's owner lookups
	sum, out, err := run(t, f, Options{Namespaces: []string{"ci"}, Grace: 10 * time.Minute}, FormatText)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out)
	}
	want := []string{
		"pod ci/expired-running", "pod ci/expired-ttl0",
		"configmap ci/cm-gone-owner", "configmap ci/cm-no-owner-old", "configmap ci/cm-recreated-owner",
		"secret ci/secret-no-owner-old",
	}
	if got := f.deleteCalls(); !slices.Equal(got, want) {
		t.Fatalf("deletes:\n%s\nwant:\n%s\noutput:\n%s", joinLines(got), joinLines(want), out)
	}
	for _, k := range []struct {
		kind Kind
		name string
	}{{KindPod, "young"}, {KindPod, "no-annotation"}, {KindPod, "malformed-abc"}, {KindPod, "future"},
		{KindPod, "terminating"}, {KindConfigMap, "cm-live-owner"}, {KindConfigMap, "cm-no-owner-young"},
		{KindConfigMap, "user-cm"}, {KindSecret, "secret-live-owner"}, {KindSecret, "user-secret"}} {
		if !f.has(k.kind, "ci", k.name) {
			t.Errorf("%s ci/%s was deleted", k.kind, k.name)
		}
	}
	if !f.has(KindPod, "other", "expired-elsewhere") || !f.has(KindConfigMap, "other", "cm-elsewhere") {
		t.Error("an object in a namespace not given was deleted")
	}
	if sum.Pods.Deleted != 2 || sum.Pods.Skipped != 3 || sum.ConfigMaps.Deleted != 3 || sum.Secrets.Deleted != 1 || sum.Failed() != 0 {
		t.Errorf("summary %+v", sum)
	}
	for _, line := range []string{
		"deleted pod ci/expired-running (uid uid-pod-ci-expired-running): ttl 3600s expired 1h0m0s ago",
		`skipped pod ci/malformed-abc (uid uid-pod-ci-malformed-abc): annotation cleaner.kubernetes.gitlab.org/ttl unusable; pod left alone: malformed ttl: "abc" is not a whole number`,
		"deleted configmap ci/cm-no-owner-old",
		"deleted configmap ci/cm-recreated-owner (uid uid-configmap-ci-cm-recreated-owner): owner pod no-annotation gone",
		"summary: pods scanned=9 expired=2 deleted=2 skipped=3",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
	}
	if n := strings.Count(out, "\n"); n != 2+3+3+1+1 {
		t.Errorf("%d lines, want one per action + summary:\n%s", n, out)
	}
	// Owners seen by the pod pass need no extra Get; only the two unknown
	// owner names (deleted-runner; cm in no other list) are looked up.
	if f.gets != 1 {
		t.Errorf("%d owner Gets, want 1 (only deleted-runner is unknown to the pod pass)", f.gets)
	}
}

// Hundreds of objects are processed page by page: every list asks for at
// most ChunkSize items and follows Continue to the end.
func TestCleanerPaginates(t *testing.T) {
	f := newFakeStore()
	const n = 250
	for i := range n {
		ttl := "60"
		if i%2 == 0 {
			ttl = "86400"
		}
		f.add(KindPod, pod("ci", fmt.Sprintf("pod-%03d", i), time.Hour, &ttl))
		f.add(KindConfigMap, owned("ci", fmt.Sprintf("cm-%03d", i), time.Hour, nil))
	}
	sum, out, err := run(t, f, Options{Namespaces: []string{"ci"}, ChunkSize: 7, Kinds: []Kind{KindPod, KindConfigMap}}, FormatText)
	if err != nil {
		t.Fatal(err, out)
	}
	if sum.Pods.Scanned != n || sum.Pods.Deleted != n/2 || sum.ConfigMaps.Deleted != n {
		t.Fatalf("summary %+v", sum)
	}
	// Plus one list of ended pods (none have ended).
	if len(f.lists) != 2*((n+6)/7)+1 {
		t.Errorf("%d list calls, want %d", len(f.lists), 2*((n+6)/7)+1)
	}
	for _, l := range f.lists {
		if l.Limit != 7 {
			t.Fatalf("list without the page limit: %+v", l)
		}
	}
	if got := len(f.names(KindPod)); got != n/2 {
		t.Errorf("%d pods left, want %d", got, n/2)
	}
}

// An expired continue token restarts the list; nothing is missed.
func TestCleanerRestartsListWhenContinueExpires(t *testing.T) {
	f := newFakeStore()
	for i := range 20 {
		f.add(KindPod, pod("ci", fmt.Sprintf("pod-%02d", i), time.Hour, ptr("1")))
	}
	f.expireContinueOnce = true
	sum, out, err := run(t, f, Options{Namespaces: []string{"ci"}, ChunkSize: 5, Kinds: []Kind{KindPod}}, FormatText)
	if err != nil {
		t.Fatal(err, out)
	}
	if sum.Pods.Deleted != 20 || len(f.names(KindPod)) != 0 {
		t.Fatalf("summary %+v, left %v", sum, f.names(KindPod))
	}
}

// A pod recreated under the same name between list and delete survives: the
// UID precondition fails, the run reports a conflict and still succeeds.
func TestCleanerNeverDeletesARecreatedObject(t *testing.T) {
	f := newFakeStore()
	f.add(KindPod, pod("ci", "runner-1", time.Hour, ptr("60")))
	f.add(KindConfigMap, owned("ci", "scripts-1", time.Hour, nil))
	f.beforeDelete = func(kind Kind, ns, name string) {
		m := pod(ns, name, 0, ptr("60"))
		if kind == KindConfigMap {
			m = owned(ns, name, 0, nil)
		}
		m.UID = types.UID("new-" + name)
		f.add(kind, m)
	}
	sum, out, err := run(t, f, Options{Namespaces: []string{"ci"}, Kinds: []Kind{KindPod, KindConfigMap}}, FormatText)
	if err != nil {
		t.Fatalf("a conflict is not a failure: %v\n%s", err, out)
	}
	if !f.has(KindPod, "ci", "runner-1") || !f.has(KindConfigMap, "ci", "scripts-1") {
		t.Fatal("recreated object deleted")
	}
	if sum.Pods.Conflicts != 1 || sum.ConfigMaps.Conflicts != 1 || sum.Pods.Deleted != 0 {
		t.Errorf("summary %+v", sum)
	}
	if !strings.Contains(out, "conflict pod ci/runner-1 (uid uid-pod-ci-runner-1): name now belongs to another object") {
		t.Errorf("output:\n%s", out)
	}
}

// A failed delete makes the run fail but does not stop it; a NotFound is
// reported as gone and is not a failure.
func TestCleanerDeleteFailure(t *testing.T) {
	f := newFakeStore()
	f.add(KindPod, pod("ci", "a", time.Hour, ptr("1")))
	f.add(KindPod, pod("ci", "b", time.Hour, ptr("1")))
	f.add(KindPod, pod("ci", "c", time.Hour, ptr("1")))
	f.failDelete["ci/a"] = true
	f.beforeDelete = func(kind Kind, ns, name string) {
		if name == "b" {
			f.mu.Lock()
			delete(f.objs[kind], ns+"/"+name)
			f.mu.Unlock()
		}
	}
	sum, out, err := run(t, f, Options{Namespaces: []string{"ci"}}, FormatText)
	if err == nil {
		t.Fatalf("Run succeeded despite a failed delete:\n%s", out)
	}
	if sum.Pods.Failed != 1 || sum.Pods.Gone != 1 || sum.Pods.Deleted != 1 || f.has(KindPod, "ci", "c") {
		t.Errorf("summary %+v", sum)
	}
	if !strings.Contains(out, "failed to delete pod ci/a (uid uid-pod-ci-a): ttl 1s expired 59m59s ago: Internal error occurred: etcd timeout") ||
		!strings.Contains(out, "gone pod ci/b") {
		t.Errorf("output:\n%s", out)
	}
}

// A list the service account may not do fails the run; the other kinds are
// still cleaned.
func TestCleanerListFailure(t *testing.T) {
	f := newFakeStore()
	f.add(KindPod, pod("ci", "a", time.Hour, ptr("1")))
	f.failList = KindSecret
	sum, out, err := run(t, f, Options{Namespaces: []string{"ci"}}, FormatText)
	if err == nil || sum.ListFailures != 1 || sum.Pods.Deleted != 1 {
		t.Fatalf("err %v summary %+v\n%s", err, sum, out)
	}
	if !strings.Contains(out, "failed secret in namespace ci: list secrets in namespace \"ci\": secrets is forbidden") {
		t.Errorf("output:\n%s", out)
	}
}

func TestCleanerDryRun(t *testing.T) {
	for _, mode := range []DryRun{DryRunClient, DryRunServer} {
		t.Run(string(mode), func(t *testing.T) {
			f := newFakeStore()
			f.add(KindPod, pod("ci", "old", time.Hour, ptr("1")))
			f.add(KindSecret, owned("ci", "leak", time.Hour, nil))
			sum, out, err := run(t, f, Options{Namespaces: []string{"ci"}, DryRun: mode}, FormatText)
			if err != nil {
				t.Fatal(err)
			}
			if !f.has(KindPod, "ci", "old") || !f.has(KindSecret, "ci", "leak") {
				t.Fatal("dry run deleted something")
			}
			if calls := len(f.deleteCalls()); (mode == DryRunServer) != (calls == 2) || (mode == DryRunClient && calls != 0) {
				t.Errorf("%d delete calls in %s mode", calls, mode)
			}
			if sum.Pods.Matched != 1 || sum.Secrets.Matched != 1 || sum.Pods.Deleted != 0 {
				t.Errorf("summary %+v", sum)
			}
			for _, s := range []string{"would delete pod ci/old", "would delete secret ci/leak", "(dry run: nothing deleted)"} {
				if !strings.Contains(out, s) {
					t.Errorf("output lacks %q:\n%s", s, out)
				}
			}
		})
	}
}

// The user's selector narrows every list; the Tether label is always kept.
func TestCleanerSelector(t *testing.T) {
	f := newFakeStore()
	a := pod("ci", "a", time.Hour, ptr("1"))
	a.Labels = map[string]string{"runner": "r1"}
	f.add(KindPod, a)
	f.add(KindPod, pod("ci", "b", time.Hour, ptr("1")))
	cm := owned("ci", "cm", time.Hour, nil)
	cm.Labels["runner"] = "r1"
	f.add(KindConfigMap, cm)
	f.add(KindConfigMap, owned("ci", "cm2", time.Hour, nil))
	if _, out, err := run(t, f, Options{Namespaces: []string{"ci"}, Selector: "runner=r1"}, FormatText); err != nil {
		t.Fatal(err, out)
	}
	if got := f.deleteCalls(); !slices.Equal(got, []string{"pod ci/a", "configmap ci/cm"}) {
		t.Fatalf("deletes %v", got)
	}
	for _, l := range f.lists {
		if l.LabelSelector != "runner=r1" && l.LabelSelector != ManagedByLabel+"="+ManagedByValue+",runner=r1" {
			t.Errorf("list selector %q", l.LabelSelector)
		}
	}
}

// All namespaces: one cluster-wide list per kind; owners are checked in
// the object's own namespace.
func TestCleanerAllNamespaces(t *testing.T) {
	f := newFakeStore()
	f.add(KindPod, pod("a", "p", time.Hour, ptr("1")))
	f.add(KindPod, pod("b", "p", time.Hour, ptr("999999")))
	owner, _ := f.Get(context.Background(), KindPod, "b", "p")
	f.add(KindConfigMap, owned("a", "cm", time.Hour, &owner.ObjectMeta)) // same name, other namespace: orphan
	f.add(KindConfigMap, owned("b", "cm", time.Hour, &owner.ObjectMeta))
	if _, out, err := run(t, f, Options{Namespaces: []string{""}}, FormatText); err != nil {
		t.Fatal(err, out)
	}
	if got := f.deleteCalls(); !slices.Equal(got, []string{"pod a/p", "configmap a/cm"}) {
		t.Fatalf("deletes %v", got)
	}
}

func TestCleanerJSONReport(t *testing.T) {
	f := newFakeStore()
	f.add(KindPod, pod("ci", "old", 90*time.Second, ptr("30")))
	f.add(KindPod, pod("ci", "bad", time.Hour, ptr("1e3")))
	_, out, err := run(t, f, Options{Namespaces: []string{"ci"}}, FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 lines:\n%s", out)
	}
	var ev []map[string]any
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		ev = append(ev, m)
	}
	if ev[0]["action"] != "skipped" || ev[0]["name"] != "bad" || !strings.Contains(ev[0]["error"].(string), `"1e3"`) {
		t.Errorf("line 1: %v", ev[0])
	}
	if ev[1]["action"] != "deleted" || ev[1]["name"] != "old" || ev[1]["ttl_seconds"] != 30.0 || ev[1]["age_seconds"] != 90.0 || ev[1]["uid"] != "uid-pod-ci-old" {
		t.Errorf("line 2: %v", ev[1])
	}
	pods := ev[2]["pods"].(map[string]any)
	if ev[2]["action"] != "summary" || pods["deleted"] != 1.0 || pods["skipped"] != 1.0 || ev[2]["failed"] != 0.0 {
		t.Errorf("summary: %v", ev[2])
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, o := range []Options{
		{},
		{Namespaces: []string{"", "ci"}},
		{Namespaces: []string{"ci"}, Selector: "a in (b"},
		{Namespaces: []string{"ci"}, DryRun: "maybe"},
	} {
		if _, err := New(newFakeStore(), NewReporter(&bytes.Buffer{}, FormatText), o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}
