package actions

import "github.com/tether-ci/tether/internal/contract"

// Permission is one thing the hook's identity must be allowed in the job
// pods' namespace: all of its Verbs.
type Permission = contract.Permission

// Access is everything the hook does in the job pods' namespace: the
// Role in RBACFile grants exactly this.
var Access = []Permission{
	{Resource: "pods", Verbs: []string{"create", "get", "list", "watch", "delete"},
		For: "prepare_job creates the job's pod, reads the runner's pod (its owner) and follows the pod while it starts; cleanup_job lists and deletes"},
	{Resource: "pods/attach", Verbs: []string{"create", "get"}, For: "every step attaches to the job container (WebSocket uses get, SPDY create)"},
	{Resource: "pods/log", Verbs: []string{"get"}, For: "a step's last output after the job container ended; a container step's output"},
	{Resource: "pods/ephemeralcontainers", Verbs: []string{"patch", "update"}, For: "run_container_step adds the step's container to the job's pod"},
	{Resource: "secrets", Verbs: []string{"create", "get", "update", "delete"},
		For: "prepare_job keeps the job container's env and the registry credentials in Secrets owned by the pod; run_container_step adds a step's credentials to the pull Secret and keeps its env in a Secret it deletes after the step"},
	{Resource: "events", Verbs: []string{"list", "watch"}, For: "prepare_job reports the pod's events (image pulls, scheduling) while it starts; a step learns who preempted its pod"},
	{Resource: "pods", Verbs: []string{"update"}, For: "with " + EnvPool + ": prepare_job claims a warm pod (else every job creates its pod)"},
	{Resource: "events", Verbs: []string{"create"}, For: "with " + EnvPool + ": prepare_job records why a job found no warm pod (tether pool status counts them)"},
	{Group: "policy", Resource: "poddisruptionbudgets", Verbs: []string{"create"},
		For: "prepare_job protects the job's pod from node drains with a PodDisruptionBudget owned by the pod (without it the job runs unprotected, with a warning)"},
}

// RBACFile is where the project keeps the Role that grants Access.
const RBACFile = "deploy/actions/rbac.yaml"
