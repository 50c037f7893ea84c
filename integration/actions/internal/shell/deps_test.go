package shell

import (
	"testing"

	"github.com/tether-ci/tether/internal/testing/deps"
)

func TestDependencies(t *testing.T) {
	deps.Only(t, "integration/actions/internal/shell",
		"shell quoting uses none of the project's packages")
}
