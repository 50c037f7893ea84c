package runcmd

import (
	"testing"

	"github.com/tether-ci/tether/internal/testing/deps"
)

// Commands and integrations import this package, never the reverse: of
// the project's packages it uses no command (cmd/...) and no integration
// (integration/...).
func TestDependencies(t *testing.T) {
	deps.Forbid(t, "internal/runcmd", "it may use no command and no integration", "cmd", "integration")
}
