package runnerapi

// Permission is one thing the driver does with the Kubernetes API in the
// jobs' namespace: a verb on a resource ("pods", or a subresource such as
// "pods/attach") of an API group (the core group unless Group says).
type Permission struct {
	Group    string
	Resource string
	// Verbs: any one of them is enough (pods/attach: get for WebSocket,
	// create for SPDY; the driver tries WebSocket first).
	Verbs []string
	// Required: without it jobs fail. Without the others they run, with
	// less in the job log or slower.
	Required bool
	// For says what the driver needs it for, for the message that names
	// a missing one.
	For string
}

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
}

// RBACFile is where the project keeps the Role that grants Access.
const RBACFile = "deploy/gitlab/rbac.yaml"
