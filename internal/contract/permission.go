package contract

// Permission is one thing a Tether program does with the Kubernetes API in
// the job pods' namespace: verbs on a resource ("pods", or a subresource
// such as "pods/attach") of an API group (the core group unless Group says). A program's list of them (the GitLab
// driver's, the Actions hook's) is what its Role in deploy/ grants,
// exactly; deploy's tests compare the two.
type Permission struct {
	// Group is the resource's API group ("" the core group).
	Group string
	// Resource is a resource or subresource of Group.
	Resource string
	// Verbs are the verbs it uses on Resource. Where a program checks its
	// access before it starts (the GitLab driver), any one of them is
	// enough (pods/attach: get for WebSocket, create for SPDY).
	Verbs []string
	// Required: without it jobs fail. Without the others they run, with
	// less in the job log or slower. Only a program that checks its
	// access reads it.
	Required bool
	// For says what the program needs it for, for the message that names
	// a missing one.
	For string
}

// NodeRead is the one cluster-scoped thing a job's client does with the
// API: while it cannot reach the shim, client/kube's Run reads the job
// pod's node to tell a lost node (docs/disruptions.md). It is optional
// (without it a lost node is told from the pod's Ready condition alone)
// and no namespaced Role can grant it: NodeReadRBACFile and the pool
// chart's nodeReader value grant exactly it, deploy's tests compare them.
func NodeRead() Permission {
	return Permission{Resource: "nodes", Verbs: []string{"get"},
		For: "a job whose shim cannot be reached reads its pod's node, to end at once when the node is lost (else a pod that never became ready waits out the reconnect timeout)"}
}

// NodeReadRBACFile is where the project keeps the opt-in ClusterRole and
// ClusterRoleBinding that grant NodeRead to the integrations' identities.
const NodeReadRBACFile = "deploy/nodes/rbac.yaml"
