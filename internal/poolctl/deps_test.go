package poolctl

import (
	"testing"

	"github.com/tether-ci/tether/internal/testing/deps"
)

// The controller sits above the pools file and client/kube and below the
// commands: of the project's packages it uses no command (cmd/...), no
// integration, no other command package (runcmd, gccmd, poolcmd) and not
// cmdutil (the command's concerns).
func TestDependencies(t *testing.T) {
	deps.Forbid(t, "internal/poolctl", "it may use internal/pool, settings, client/kube and internal/contract only",
		"cmd", "integration", "internal/runcmd", "internal/gccmd", "internal/poolcmd", "internal/cmdutil", "client/local", "client/docker")
}
