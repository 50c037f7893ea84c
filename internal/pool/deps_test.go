package pool

import (
	"testing"

	"github.com/tether-ci/tether/internal/testing/deps"
)

// The pools file sits on the settings layer: of the project's packages it
// uses settings, client/kube (and what they use) and internal/contract,
// never the controller, a command or an integration.
func TestDependencies(t *testing.T) {
	deps.Forbid(t, "internal/pool", "it may use settings, client/kube and internal/contract only", "cmd", "integration", "internal/poolctl", "internal/poolcmd", "internal/runcmd", "internal/cmdutil")
}
