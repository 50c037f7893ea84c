package gitlab

import (
	"slices"

	"github.com/tether-ci/tether/integration/gitlab/internal/runnerapi"
)

// Permission is one thing the driver does with the Kubernetes API in the
// jobs' namespace: a verb on a resource of the core API group, any one of
// its Verbs being enough.
type Permission = runnerapi.Permission

// Permissions returns everything the driver does with the API in the jobs'
// namespace: what prepare checks before it creates a pod, and what the
// Role of RBACFile grants, exactly.
func Permissions() []Permission { return slices.Clone(runnerapi.Access) }

// RBACFile is where the project keeps the Role that grants Permissions.
const RBACFile = runnerapi.RBACFile
