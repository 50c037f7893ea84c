package hookapi

import (
	"testing"

	"github.com/tether-ci/tether/internal/testing/deps"
)

func TestDependencies(t *testing.T) {
	deps.Only(t, "integration/actions/hookapi",
		"the runner's contract is data: it uses none of the project's packages")
}
