package clientset_test

import (
	"testing"

	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
	"github.com/tether-ci/tether/internal/testing/kubeapicheck"
)

// The fake clientset the unit tests use, wrapped, has the API semantics
// the e2e suite checks of the real API server through kubeapi.New
// (test/e2e's TestKubeAPISemantics), except that its watch ignores label
// selectors.
func TestWrappedFakeSemantics(t *testing.T) {
	kubeapicheck.Run(t, clientset.Wrap(kubeapicheck.CASFake()), "ci", kubeapicheck.Options{WatchIgnoresSelectors: true})
}
