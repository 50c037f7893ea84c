package dockeropts

import (
	"testing"

	"github.com/tether-ci/tether/internal/testing/deps"
)

func TestDependencies(t *testing.T) {
	deps.Only(t, "integration/actions/internal/dockeropts",
		"docker options are pure: they may use internal/shell only", "integration/actions/internal/shell")
}
