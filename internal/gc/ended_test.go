package gc

import (
	"strings"
	"testing"
	"time"
)

// Tether's pods that have ended (Succeeded or Failed) go once older than
// the grace period, whatever their TTL, and their ConfigMaps and Secrets go
// in the same run; running, young, or foreign ended pods stay.
func TestCleanerDeletesEndedPods(t *testing.T) {
	f := newFakeStore()
	tether := func(name string, age time.Duration, phase string) {
		m := pod("ci", name, age, ptr("86400"))
		m.Labels = map[string]string{ManagedByLabel: ManagedByValue}
		f.add(KindPod, m)
		f.phase["ci/"+name] = phase
		o := f.objs[KindPod]["ci/"+name].ObjectMeta
		f.add(KindConfigMap, owned("ci", name+"-cm", age, &o))
		f.add(KindSecret, owned("ci", name+"-secret", age, &o))
	}
	tether("succeeded", time.Hour, "Succeeded")
	tether("failed", time.Hour, "Failed")
	tether("running", time.Hour, "Running")
	tether("pending", time.Hour, "Pending")
	tether("young-failed", time.Minute, "Failed")
	foreign := pod("ci", "foreign-succeeded", time.Hour, nil)
	f.add(KindPod, foreign)
	f.phase["ci/foreign-succeeded"] = "Succeeded"

	sum, out, err := run(t, f, Options{Namespaces: []string{"ci"}, Grace: 10 * time.Minute}, FormatText)
	if err != nil {
		t.Fatal(err, out)
	}
	want := []string{"foreign-succeeded", "pending", "running", "young-failed"}
	if got := f.names(KindPod); strings.Join(got, " ") != "ci/"+strings.Join(want, " ci/") {
		t.Errorf("pods left %v, want %v\n%s", got, want, out)
	}
	for _, kind := range []Kind{KindConfigMap, KindSecret} {
		got := strings.Join(f.names(kind), " ")
		if strings.Contains(got, "ci/succeeded-") || strings.Contains(got, "ci/failed-") || !strings.Contains(got, "ci/young-failed-") {
			t.Errorf("%s left %s, want those of the deleted pods gone\n%s", kind, got, out)
		}
	}
	if sum.Pods.Deleted != 2 || sum.ConfigMaps.Deleted != 2 || sum.Secrets.Deleted != 2 {
		t.Errorf("summary %+v\n%s", sum, out)
	}
	if !strings.Contains(out, "pod ended (Succeeded or Failed)") {
		t.Errorf("report lacks the reason:\n%s", out)
	}

	// With no grace (--grace 0s), a pod that ended a moment ago goes too.
	if _, out, err := run(t, f, Options{Namespaces: []string{"ci"}, Grace: -1}, FormatText); err != nil {
		t.Fatal(err, out)
	}
	if f.has(KindPod, "ci", "young-failed") || f.has(KindConfigMap, "ci", "young-failed-cm") {
		t.Errorf("grace 0 left the ended pod or its ConfigMap: pods %v configmaps %v", f.names(KindPod), f.names(KindConfigMap))
	}
}

// In client dry-run mode an ended pod is reported once, not also by the TTL
// pass, and nothing is deleted.
func TestCleanerEndedPodsDryRun(t *testing.T) {
	f := newFakeStore()
	m := pod("ci", "done", time.Hour, ptr("60"))
	m.Labels = map[string]string{ManagedByLabel: ManagedByValue}
	f.add(KindPod, m)
	f.phase["ci/done"] = "Succeeded"
	sum, out, err := run(t, f, Options{Namespaces: []string{"ci"}, DryRun: DryRunClient, Kinds: []Kind{KindPod}}, FormatText)
	if err != nil {
		t.Fatal(err, out)
	}
	if sum.Pods.Matched != 1 || !f.has(KindPod, "ci", "done") || strings.Count(out, "would delete") != 1 {
		t.Errorf("summary %+v, output:\n%s", sum, out)
	}
}

// The summary counts the pods the ended-pod pass looked at, each once: an
// ended pod it deleted (gone before the TTL pass lists pods again, as on a
// real API server), one it left for being young (listed again by the TTL
// pass) and a running one (seen by the TTL pass alone).
func TestEndedPodsCountAsScanned(t *testing.T) {
	f := newFakeStore()
	add := func(name string, age time.Duration, phase string) {
		m := pod("ci", name, age, ptr("86400"))
		m.Labels = map[string]string{ManagedByLabel: ManagedByValue}
		f.add(KindPod, m)
		f.phase["ci/"+name] = phase
	}
	add("done", time.Hour, "Succeeded")
	add("young-done", time.Minute, "Failed")
	add("running", time.Hour, "Running")
	sum, out, err := run(t, f, Options{Namespaces: []string{"ci"}, Grace: 10 * time.Minute, Kinds: []Kind{KindPod}}, FormatText)
	if err != nil {
		t.Fatal(err, out)
	}
	if sum.Pods.Scanned != 3 || sum.Pods.Matched != 1 || sum.Pods.Deleted != 1 {
		t.Errorf("pods %+v; want scanned=3 expired=1 deleted=1\n%s", sum.Pods, out)
	}
	if !strings.Contains(out, "summary: pods scanned=3 expired=1 deleted=1 ") {
		t.Errorf("the summary line does not count the ended pods:\n%s", out)
	}

	// Only an ended pod, deleted: scanned=1, not 0.
	f = newFakeStore()
	add("last", time.Hour, "Succeeded")
	sum, out, err = run(t, f, Options{Namespaces: []string{"ci"}, Grace: 10 * time.Minute}, FormatJSON)
	if err != nil {
		t.Fatal(err, out)
	}
	if sum.Pods.Scanned != 1 || sum.Pods.Deleted != 1 || !strings.Contains(out, `"pods":{"scanned":1,"matched":1,"deleted":1`) {
		t.Errorf("pods %+v; want scanned=1 deleted=1\n%s", sum.Pods, out)
	}
}
