package gc_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/gc"
)

// The objects the Kubernetes backend builds are the ones the cleaner
// recognises: the same label and annotation names, a TTL it can parse, and
// ConfigMap/Secret labels that make them candidates for the orphan rule.
func TestKubeBackendObjectsMatchTheCleaner(t *testing.T) {
	if kube.LabelManagedBy != gc.ManagedByLabel || kube.ManagedByValue != gc.ManagedByValue || kube.AnnotationTTL != gc.TTLAnnotation {
		t.Fatalf("client/kube and internal/gc disagree: %s=%s, %s vs %s=%s, %s",
			kube.LabelManagedBy, kube.ManagedByValue, kube.AnnotationTTL, gc.ManagedByLabel, gc.ManagedByValue, gc.TTLAnnotation)
	}
	objs, err := kube.Build(kube.Spec{
		Namespace: "ci", Image: "busybox", Timeout: time.Hour,
		Scripts: []kube.Script{{Name: "build.sh", Content: []byte("echo hi\n")}},
		Env:     map[string]string{"TOKEN": "x"},
	})
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	ann := objs.Pod.Annotations
	ttl, err := gc.ParseTTL(ann[gc.TTLAnnotation])
	if err != nil || ttl < int64(time.Hour/time.Second) {
		t.Fatalf("pod TTL annotation %q: %d, %v (want at least the 1h timeout)", ann[gc.TTLAnnotation], ttl, err)
	}
	if d := gc.DecideTTL(ann, created, created.Add(time.Duration(ttl)*time.Second)); d.State != gc.Alive {
		t.Errorf("pod at its TTL: %v", d.State)
	}
	if d := gc.DecideTTL(ann, created, created.Add(time.Duration(ttl+1)*time.Second)); d.State != gc.Expired {
		t.Errorf("pod past its TTL: %v", d.State)
	}
	gone := func(context.Context, string, string, types.UID) (bool, error) { return false, nil }
	for _, m := range []*metav1.ObjectMeta{&objs.ConfigMap.ObjectMeta, &objs.Secret.ObjectMeta} {
		m.CreationTimestamp = metav1.NewTime(created)
		d, err := gc.DecideOrphan(context.Background(), m, time.Minute, created.Add(time.Hour), gone)
		if err != nil || d.State != gc.Orphaned {
			t.Errorf("%s without a live owner: %v %v (%s)", m.Name, d.State, err, d.Reason)
		}
	}
	if objs.Pod.Labels[gc.ManagedByLabel] != gc.ManagedByValue {
		t.Errorf("pod labels %v", objs.Pod.Labels)
	}
}
