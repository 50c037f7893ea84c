package transfer

import (
	"testing"

	"github.com/tether-ci/tether/internal/testing/deps"
)

func TestDependencies(t *testing.T) {
	deps.Only(t, "integration/actions/internal/transfer",
		"file delivery may use the client (client, client/kube) and internal/shell only, never the hook's commands or its contract", "client", "client/kube", "integration/actions/internal/shell")
}
