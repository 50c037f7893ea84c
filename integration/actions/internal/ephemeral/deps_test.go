package ephemeral

import (
	"testing"

	"github.com/tether-ci/tether/internal/testing/deps"
)

func TestDependencies(t *testing.T) {
	deps.Only(t, "integration/actions/internal/ephemeral",
		"following a container step may use client/kube only", "client/kube")
}
