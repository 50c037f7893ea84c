package gc

import (
	"testing"
	"time"

	"github.com/tether-ci/tether/client/kube"
)

// Warm pods of a pool are the cleaner's like any job pod: they carry the
// TTL annotation (max-idle plus a margin, from their creation) and the
// label of Tether's pods, so a warm pod left behind by a controller that
// is gone is deleted once it ended (the ended pass) or its TTL passed.
func TestWarmPodsAreCleaned(t *testing.T) {
	const maxIdle = 20 * time.Minute
	objs, err := kube.WarmPod(kube.Spec{Namespace: "ci", Image: "alpine:3"}, kube.WarmOptions{Pool: "small", MaxIdle: maxIdle})
	if err != nil {
		t.Fatal(err)
	}
	pod := objs.Pod
	if pod.Labels[ManagedByLabel] != ManagedByValue {
		t.Fatalf("a warm pod lacks %s=%s: the ended pass would not see it", ManagedByLabel, ManagedByValue)
	}
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if d := DecideTTL(pod.Annotations, created, created.Add(maxIdle)); d.State != Alive {
		t.Errorf("at max-idle the warm pod is %s, want alive (its shim ends it; the cleaner waits)", d.State)
	}
	end := created.Add(maxIdle + kube.WarmTTLMargin + time.Second)
	if d := DecideTTL(pod.Annotations, created, end); d.State != Expired {
		t.Errorf("max-idle + %s after its creation the warm pod is %s, want expired", kube.WarmTTLMargin, d.State)
	}
}
