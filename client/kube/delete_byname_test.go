package kube

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	ktesting "k8s.io/client-go/testing"

	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
)

// DeleteByName deletes the pod of its name under that pod's UID (a
// precondition), and a name no pod has is no error.
func TestDeleteByName(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ci", Name: "p", UID: "uid-7"}})
	var precondition string
	cs.PrependReactor("delete", "pods", func(a ktesting.Action) (bool, runtime.Object, error) {
		if pre := a.(ktesting.DeleteAction).GetDeleteOptions().Preconditions; pre != nil && pre.UID != nil {
			precondition = string(*pre.UID)
		}
		return false, nil, nil
	})
	p := &Pod{Client: clientset.Wrap(cs), Namespace: "ci", Name: "p"}
	uid, err := p.DeleteByName(ctx)
	if err != nil || uid != "uid-7" || p.UID() != "uid-7" || precondition != "uid-7" {
		t.Fatalf("DeleteByName: uid %q, Pod.UID %q, precondition %q, err %v", uid, p.UID(), precondition, err)
	}
	if _, err := cs.CoreV1().Pods("ci").Get(ctx, "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the pod is still there: %v", err)
	}
	if uid, err := p.DeleteByName(ctx); uid != "" || err != nil {
		t.Fatalf("DeleteByName of a name no pod has: %q, %v", uid, err)
	}
}
