package actionspod

import (
	"testing"

	"github.com/tether-ci/tether/internal/testing/deps"
)

// The Actions pod shape sits below the hook and the pools file: it uses
// settings and client/kube, never an integration, a command or a pool.
func TestDependencies(t *testing.T) {
	deps.Forbid(t, "internal/actionspod", "it may use settings and client/kube only", "cmd", "integration", "internal/pool", "internal/poolctl", "internal/poolcmd", "internal/runcmd", "internal/cmdutil")
}
