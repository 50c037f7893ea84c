package poolcmd

import (
	"testing"

	"github.com/tether-ci/tether/internal/testing/deps"
)

// Commands import this package, never the reverse: of the project's
// packages it uses no command (cmd/...) and no integration
// (integration/...).
func TestDependencies(t *testing.T) {
	deps.Forbid(t, "internal/poolcmd", "it may use no command and no integration", "cmd", "integration")
}
