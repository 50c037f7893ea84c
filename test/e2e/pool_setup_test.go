//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
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

// servedPool is a pools file that `tether pool serve` reads, and the
// kubeconfig of the controller's least-privilege identity in ns.
type servedPool struct {
	// Kubeconfig is the controller's (poolKubeconfig).
	Kubeconfig string
	// Config is the pools file: write it again to change the pools.
	Config string
}

// servePool writes a pools file holding entry (poolEntry) and makes the
// controller's kubeconfig for ns; start a controller on it with serve.
func (c *Cluster) servePool(ctx context.Context, t *testing.T, ns, entry string) *servedPool {
	t.Helper()
	sp := &servedPool{Kubeconfig: c.poolKubeconfig(ctx, t, ns), Config: filepath.Join(t.TempDir(), "pools.yaml")}
	poolWriteFile(t, sp.Config, entry)
	return sp
}

// serve starts a controller (startPoolController) named identity on the
// pool.
func (sp *servedPool) serve(t *testing.T, identity string) *poolController {
	t.Helper()
	return startPoolController(t, sp.Kubeconfig, sp.Config, identity)
}
