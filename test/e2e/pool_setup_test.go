//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/contract"
	"github.com/tether-ci/tether/internal/pool"
)

// poolFileSpec is the warm pods' settings, in namespace ns, of the one
// pool of a pools file whose entry (its keys after "- name: NAME") is
// keys: the spec `tether pool serve` would give them.
func poolFileSpec(t *testing.T, ns, name, keys string) kube.Spec {
	t.Helper()
	pools, err := pool.Parse("pools.yaml", fmt.Appendf(nil, "pools:\n- name: %s\n%s", name, keys))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := pools[0].Spec(ns)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// missesByReason counts the WarmPodMiss Events of pool in ns by their
// reason, as `tether pool status` does.
func missesByReason(ctx context.Context, t *testing.T, c *Cluster, ns, pool string) map[string]int {
	t.Helper()
	events, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + contract.EventWarmMiss})
	if err != nil {
		t.Fatal(err)
	}
	misses := map[string]int{}
	for _, e := range events.Items {
		if e.Annotations[contract.LabelPool] == pool {
			misses[e.Annotations[contract.AnnotationMissReason]]++
		}
	}
	return misses
}
