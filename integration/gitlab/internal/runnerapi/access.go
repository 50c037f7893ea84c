package runnerapi

import "github.com/tether-ci/tether/internal/contract"

// Permission is one thing the driver does with the Kubernetes API in the
// jobs' namespace (any one of its Verbs is enough; the driver tries
// WebSocket, pods/attach get, first).
type Permission = contract.Permission

// Access is all the driver does with the API: prepare checks it before it
// creates a pod, and deploy/gitlab/rbac.yaml grants exactly this.
var Access = []Permission{
	{Resource: "pods", Verbs: []string{"create"}, Required: true, For: "prepare creates the job's pod"},
	{Resource: "pods", Verbs: []string{"get"}, Required: true, For: "every command finds the job's pod"},
	{Resource: "pods", Verbs: []string{"delete"}, Required: true, For: "cleanup deletes the job's pod"},
	{Resource: "pods/attach", Verbs: []string{"get", "create"}, Required: true, For: "run attaches to the job's containers"},
	{Resource: "pods/log", Verbs: []string{"get"}, Required: true, For: "run reads a stage's last output after its container ended"},
	{Resource: "pods", Verbs: []string{"list"}, For: "prepare follows the pod while it starts (else it polls)"},
	{Resource: "pods", Verbs: []string{"watch"}, For: "prepare follows the pod while it starts (else it polls)"},
	{Resource: "events", Verbs: []string{"list"}, For: "prepare streams the pod's events (image pulls, scheduling) into the job log"},
	{Resource: "events", Verbs: []string{"watch"}, For: "prepare streams the pod's events (image pulls, scheduling) into the job log"},
	{Group: "policy", Resource: "poddisruptionbudgets", Verbs: []string{"create"}, For: "prepare protects the job's pod from node drains (a PodDisruptionBudget owned by the pod)"},
	{Resource: "pods", Verbs: []string{"update"}, For: "with a pool: prepare claims a warm pod (else every job starts a pod of its own)"},
	{Resource: "events", Verbs: []string{"create"}, For: "with a pool: prepare records why a job found no warm pod (tether pool status counts them)"},
}

// RBACFile is where the project keeps the Role that grants Access.
const RBACFile = "deploy/gitlab/rbac.yaml"
