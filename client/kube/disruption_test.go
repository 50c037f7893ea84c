package kube

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ktesting "k8s.io/client-go/testing"

	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
)

// Every job pod gets a budget that selects it alone, with an integer
// minAvailable of 1, owned by the pod; the pod carries the autoscalers'
// annotations.
func TestCreateProtectsThePod(t *testing.T) {
	cs, objs, p := createTestPod(context.Background(), t)
	b, err := cs.PolicyV1().PodDisruptionBudgets("ci").Get(context.Background(), p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := b.Spec.MinAvailable; m == nil || m.Type != 0 || m.IntVal != 1 {
		t.Errorf("minAvailable %v; want the integer 1", m)
	}
	job := objs.Pod.Labels[LabelJob]
	if sel := b.Spec.Selector; sel == nil || len(sel.MatchLabels) != 1 || sel.MatchLabels[LabelJob] != job || job == "" {
		t.Errorf("selector %v; want %s=%s alone", sel, LabelJob, job)
	}
	if refs := b.OwnerReferences; len(refs) != 1 || refs[0].Kind != "Pod" || refs[0].UID != p.UID() || refs[0].Name != p.Name {
		t.Errorf("ownerReferences %+v; want the pod", refs)
	}
	if a := objs.Pod.Annotations; a[AnnotationSafeToEvict] != "false" || a[AnnotationDoNotDisrupt] != "true" {
		t.Errorf("annotations %v; want safe-to-evict false and do-not-disrupt true", a)
	}
}

// With the protection off there is no budget and no annotation.
func TestCreateUnprotected(t *testing.T) {
	cs := fakeCluster()
	spec := testSpec()
	spec.NoDisruptionProtection = true
	objs, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Create(context.Background(), clientset.Wrap(cs), objs, nil); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(verbs(cs), ", "); got != "create pods, create configmaps, create secrets" {
		t.Errorf("actions %q; want no budget", got)
	}
	if a := objs.Pod.Annotations; a[AnnotationSafeToEvict] != "" || a[AnnotationDoNotDisrupt] != "" {
		t.Errorf("annotations %v; want none of the protection's", a)
	}
}

// A namespace that refuses the budget (RBAC, a quota) gets one warning
// naming what to do, and the job's pod is created all the same.
func TestCreateBudgetRefused(t *testing.T) {
	for _, tc := range []struct{ why, hint string }{
		{`User "ci" cannot create resource "poddisruptionbudgets"`, "lacks create on poddisruptionbudgets"},
		{"exceeded quota: q, requested: count/poddisruptionbudgets.policy=1", "ResourceQuota"},
	} {
		cs := fakeCluster()
		cs.PrependReactor("create", "poddisruptionbudgets", func(ktesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}, "x", errors.New(tc.why))
		})
		objs, err := Build(testSpec())
		if err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		p, err := Create(context.Background(), clientset.Wrap(cs), objs, slog.New(slog.NewTextHandler(&log, nil)))
		if err != nil || p == nil {
			t.Fatalf("Create = %v; want the pod created without its budget", err)
		}
		warnings := strings.Count(log.String(), "level=WARN")
		if warnings != 1 || !strings.Contains(log.String(), tc.hint) || !strings.Contains(log.String(), "--no-disruption-protection") {
			t.Errorf("%d warnings in %q; want one naming %q", warnings, log.String(), tc.hint)
		}
	}
}

// Protect refuses a pod it cannot select alone.
func TestProtectWithoutJobLabel(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ci"}}
	if err := Protect(context.Background(), clientset.Wrap(fakeCluster()), pod); err == nil {
		t.Fatal("Protect of a pod without a job label succeeded")
	}
}
