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
