package kube

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	ktesting "k8s.io/client-go/testing"

	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
)

// fakeCluster is a fake clientset that assigns UIDs like an apiserver.
func fakeCluster() *fake.Clientset {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "*", func(a ktesting.Action) (bool, runtime.Object, error) {
		if obj, ok := a.(ktesting.CreateAction).GetObject().(metav1.Object); ok && obj.GetUID() == "" {
			obj.SetUID(types.UID("uid-" + obj.GetName()))
		}
		return false, nil, nil
	})
	return cs
}

// createTestPod builds testSpec's objects and creates them in a new fake
// cluster.
func createTestPod(ctx context.Context, t *testing.T) (*fake.Clientset, *Objects, *Pod) {
	t.Helper()
	cs := fakeCluster()
	objs, p := createPodIn(ctx, t, cs)
	return cs, objs, p
}

// createPodIn builds testSpec's objects and creates them in cs.
func createPodIn(ctx context.Context, t *testing.T, cs *fake.Clientset) (*Objects, *Pod) {
	t.Helper()
	objs, err := Build(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	p, err := Create(ctx, clientset.Wrap(cs), objs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return objs, p
}

// verbs lists "verb resource" for every action, in order.
func verbs(cs *fake.Clientset) []string {
	var out []string
	for _, a := range cs.Actions() {
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
	}
	return out
}

func TestCreatePodFirstThenOwnedObjects(t *testing.T) {
	cs, objs, p := createTestPod(context.Background(), t)
	if got, want := strings.Join(verbs(cs), ", "), "create pods, create configmaps, create secrets, create poddisruptionbudgets"; got != want {
		t.Fatalf("actions %q, want %q", got, want)
	}
	cm, err := cs.CoreV1().ConfigMaps("ci").Get(context.Background(), objs.ConfigMap.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec, err := cs.CoreV1().Secrets("ci").Get(context.Background(), objs.Secret.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for what, refs := range map[string][]metav1.OwnerReference{"ConfigMap": cm.OwnerReferences, "Secret": sec.OwnerReferences} {
		if len(refs) != 1 || refs[0].Kind != "Pod" || refs[0].Name != p.Name || refs[0].UID != p.UID() || p.UID() == "" {
			t.Errorf("%s ownerReferences %+v; want the pod %s (uid %s)", what, refs, p.Name, p.UID())
		}
	}
	if objs.ConfigMap.OwnerReferences != nil {
		t.Error("Create modified the built ConfigMap")
	}
}

func TestCreateRejectedPodLeavesNothing(t *testing.T) {
	cs := fakeCluster()
	cs.PrependReactor("create", "pods", func(a ktesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "x",
			errors.New("exceeded quota: q, requested: pods=1, used: pods=0, limited: pods=0"))
	})
	objs, err := Build(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	_, err = Create(context.Background(), clientset.Wrap(cs), objs, nil)
	if err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota") {
		t.Fatalf("Create = %v; want the quota error", err)
	}
	if got := strings.Join(verbs(cs), ", "); got != "create pods" {
		t.Fatalf("actions %q: something besides the rejected pod was attempted", got)
	}
}

func TestCreateOwnedObjectFailureDeletesPod(t *testing.T) {
	for _, res := range []string{"configmaps", "secrets"} {
		t.Run(res, func(t *testing.T) {
			cs := fakeCluster()
			cs.PrependReactor("create", res, func(a ktesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(corev1.Resource(res), "x", errors.New("exceeded quota"))
			})
			objs, err := Build(testSpec())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Create(context.Background(), clientset.Wrap(cs), objs, nil); err == nil {
				t.Fatal("Create succeeded")
			}
			acts := verbs(cs)
			if acts[len(acts)-1] != "delete pods" {
				t.Fatalf("actions %v; want the pod deleted last", acts)
			}
			pods, _ := cs.CoreV1().Pods("ci").List(context.Background(), metav1.ListOptions{})
			if len(pods.Items) != 0 {
				t.Fatalf("%d pods left", len(pods.Items))
			}
		})
	}
}

func TestDeleteToleratesGonePod(t *testing.T) {
	_, _, p := createTestPod(context.Background(), t)
	if err := p.Delete(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.Delete(context.Background()); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
}

// Delete asks for Pod.DeleteGrace (whole seconds) when it is set, and
// leaves the grace to the pod's own spec when it is not.
func TestDeleteGrace(t *testing.T) {
	for _, tc := range []struct {
		grace time.Duration
		want  *int64
	}{{0, nil}, {3 * time.Second, new(int64(3))}, {1500 * time.Millisecond, new(int64(2))}} {
		cs, _, p := createTestPod(context.Background(), t)
		var got *metav1.DeleteOptions
		cs.PrependReactor("delete", "pods", func(a ktesting.Action) (bool, runtime.Object, error) {
			o := a.(ktesting.DeleteAction).GetDeleteOptions()
			got = &o
			return false, nil, nil
		})
		p.DeleteGrace = tc.grace
		if err := p.Delete(context.Background()); err != nil {
			t.Fatal(err)
		}
		switch {
		case got == nil:
			t.Fatalf("grace %s: no delete sent", tc.grace)
		case tc.want == nil && got.GracePeriodSeconds != nil:
			t.Errorf("grace %s: delete asks for %d s; want the pod's own", tc.grace, *got.GracePeriodSeconds)
		case tc.want != nil && (got.GracePeriodSeconds == nil || *got.GracePeriodSeconds != *tc.want):
			t.Errorf("grace %s: delete asks for %v; want %d s", tc.grace, got.GracePeriodSeconds, *tc.want)
		}
	}
}
