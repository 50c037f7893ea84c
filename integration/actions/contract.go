package actions

import "github.com/tether-ci/tether/integration/actions/hookapi"

// Container and PrepareJobArgs are the runner's descriptions of the job's
// containers (package hookapi) under the names the job pod's shape reads
// them by.
type (
	Container      = hookapi.Container
	PrepareJobArgs = hookapi.PrepareJobArgs
)
