package gitlab

import (
	"testing"

	"github.com/tether-ci/tether/internal/testing/deps"
)

// The driver sits between the settings layer and the commands: of the
// project's packages it never uses a command, another integration or
// the shim.
func TestGitLabIntegrationDependencies(t *testing.T) {
	deps.Forbid(t, "integration/gitlab",
		"it may use the client, settings, the protocol and internal helpers, never a command, another integration or the shim",
		"cmd", "integration", "internal/shim")
}
