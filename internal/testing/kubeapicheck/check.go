// Package kubeapicheck checks the API semantics Tether relies on through
// a kubeapi.Interface: the same checks run against the real API server
// (kubeapi.New, in the e2e suite) and against client-go's fake clientset
// with the resourceVersion compare-and-swap the unit tests add to it
// (clientset.Wrap), so that what the unit tests assume of the fake holds
// of the server. Test-only.
package kubeapicheck

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/tether-ci/tether/client/kube/kubeapi"
)

// Options describe where the checked client differs knowingly.
type Options struct {
	// WatchIgnoresSelectors: the watch delivers objects its label
	// selector does not match (client-go's fake does).
	WatchIgnoresSelectors bool
}

// Run checks cs in namespace ns: NotFound on Get and Delete of a missing
// pod, a label-selector List, a Watch that sees an Update, a Conflict on
// an Update that carries a stale resourceVersion, and Delete. The pods it
// creates can never be scheduled (a node selector no node has) and are
// deleted at the end.
func Run(t *testing.T, cs kubeapi.Interface, ns string, opts Options) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pods := cs.CoreV1().Pods(ns)
	mk := func(name, role string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"kubeapicheck": "true", "role": role}},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{"kubeapicheck.tether.dev/never": "true"},
				Containers:   []corev1.Container{{Name: "c", Image: "registry.invalid/never:1"}},
			},
		}
	}
	zero := int64(0)
	for _, p := range []*corev1.Pod{mk("check-a", "a"), mk("check-b", "b")} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", p.Name, err)
		}
		name := p.Name
		t.Cleanup(func() { _ = pods.Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero}) })
	}

	if _, err := pods.Get(ctx, "check-missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Get of a missing pod: %v, want NotFound", err)
	}
	if err := pods.Delete(ctx, "check-missing", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Delete of a missing pod: %v, want NotFound", err)
	}

	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "kubeapicheck=true,role=a"})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "check-a" {
		t.Errorf("List role=a: %d pods (%v), want check-a alone", len(list.Items), names(list.Items))
	}

	a, err := pods.Get(ctx, "check-a", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Get check-a: %v", err)
	}
	if a.ResourceVersion == "" {
		t.Errorf("Get check-a: no resourceVersion")
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: "role=a", ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	defer w.Stop()

	b, err := pods.Get(ctx, "check-b", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Get check-b: %v", err)
	}
	b.Annotations = map[string]string{"step": "1"}
	if _, err := pods.Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("Update check-b: %v", err)
	}
	stale := a.DeepCopy()
	a.Annotations = map[string]string{"step": "1"}
	updated, err := pods.Update(ctx, a, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("Update check-a with its current resourceVersion: %v", err)
	}
	if updated.ResourceVersion == stale.ResourceVersion {
		t.Errorf("Update kept resourceVersion %s", updated.ResourceVersion)
	}
	seen := waitModified(ctx, t, w, "check-a")
	if !opts.WatchIgnoresSelectors && seen["check-b"] {
		t.Errorf("the watch of role=a delivered check-b")
	}

	stale.Annotations = map[string]string{"step": "stale"}
	if _, err := pods.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("Update with the stale resourceVersion %s: %v, want Conflict", stale.ResourceVersion, err)
	}
	got, err := pods.Get(ctx, "check-a", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Get check-a: %v", err)
	}
	if got.Annotations["step"] != "1" {
		t.Errorf("check-a after the refused update: annotations %v, want step=1", got.Annotations)
	}

	if err := pods.Delete(ctx, "check-a", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatalf("Delete check-a: %v", err)
	}
	if err := waitGone(ctx, pods, "check-a"); err != nil {
		t.Error(err)
	}
}

// waitModified reads w until it delivers a MODIFIED event of the pod
// name, and returns the names of the pods it delivered.
func waitModified(ctx context.Context, t *testing.T, w watch.Interface, name string) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the watch ended before it delivered the update of %s", name)
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				continue
			}
			seen[p.Name] = true
			if ev.Type == watch.Modified && p.Name == name {
				if p.Annotations["step"] != "1" {
					t.Errorf("the watch's %s: annotations %v, want step=1", name, p.Annotations)
				}
				return seen
			}
		case <-ctx.Done():
			t.Fatalf("the watch did not deliver the update of %s: %v", name, ctx.Err())
		}
	}
}

// waitGone waits until Get of the pod name is NotFound.
func waitGone(ctx context.Context, pods kubeapi.PodInterface, name string) error {
	for {
		_, err := pods.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pod %s still there after Delete (last Get: %v): %w", name, err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func names(pods []corev1.Pod) []string {
	var n []string
	for _, p := range pods {
		n = append(n, p.Name)
	}
	return n
}

// CASFake returns client-go's fake clientset that stores a
// resourceVersion with each pod it creates and whose pod updates compare
// it as the API server does (a Conflict when it is not the stored one)
// and store a new one, as the unit tests of claims use it.
func CASFake(objs ...runtime.Object) *fake.Clientset {
	cs := fake.NewClientset(objs...)
	var mu sync.Mutex
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "" {
			return false, nil, nil
		}
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		if p.ResourceVersion == "" {
			p.ResourceVersion = "1"
		}
		if p.Namespace == "" {
			p.Namespace = a.GetNamespace()
		}
		return true, p, cs.Tracker().Create(pods, p, p.Namespace)
	})
	cs.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "" {
			return false, nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		up := a.(k8stesting.UpdateAction).GetObject().(*corev1.Pod)
		cur, err := cs.Tracker().Get(pods, up.Namespace, up.Name)
		if err != nil {
			return true, nil, err
		}
		if rv := cur.(*corev1.Pod).ResourceVersion; rv != up.ResourceVersion {
			return true, nil, apierrors.NewConflict(corev1.Resource("pods"), up.Name, fmt.Errorf("resourceVersion %s, not %s", rv, up.ResourceVersion))
		}
		n, _ := strconv.Atoi(up.ResourceVersion)
		up = up.DeepCopy()
		up.ResourceVersion = strconv.Itoa(n + 1)
		return true, up, cs.Tracker().Update(pods, up, up.Namespace)
	})
	return cs
}
