//go:build e2e

package e2e

import (
	"testing"

	"github.com/tether-ci/tether/client/kube/kubeapi"
	"github.com/tether-ci/tether/internal/testing/kubeapicheck"
)

// kubeapi.New against the real API server has the semantics the unit
// tests assume of client-go's fake (client/kube/kubeapi/clientset's
// TestWrappedFakeSemantics runs the same checks): NotFound, label-selector
// List, Watch, Conflict on a stale resourceVersion, Delete.
func TestKubeAPISemantics(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "kubeapi")
	cs, err := kubeapi.New(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	kubeapicheck.Run(t, cs, ns, kubeapicheck.Options{})
}
