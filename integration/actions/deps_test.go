package actions

import (
	"testing"

	"github.com/tether-ci/tether/internal/testing/deps"
)

// The hook sits between the settings layer and the commands: of the
// project's packages it never uses a command, another integration or the
// shim. Its own packages below it (hookapi, internal/...) have rules of
// their own (their deps_test.go).
func TestActionsIntegrationDependencies(t *testing.T) {
	deps.Forbid(t, "integration/actions",
		"it may use the client, settings, the protocol, internal helpers and its own packages, never a command, another integration or the shim",
		"cmd", "integration", "internal/shim")
}
