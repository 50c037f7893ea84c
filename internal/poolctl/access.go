package poolctl

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/tether-ci/tether/internal/contract"
)

// Access is everything `tether pool serve` does in its namespace, no
// more: deploy/'s Role grants exactly this (its tests check it), and the
// e2e tests run the controller with a token bound to it.
var Access = []contract.Permission{
	// Watch the pools' pods, create warm pods, mark them idle (update)
	// and delete the unclaimed ones that must go.
	{Group: "", Resource: "pods", Verbs: []string{"get", "list", "watch", "create", "update", "delete"}},
	// A warm pod is idle once its shim's hello is in its log.
	{Group: "", Resource: "pods/log", Verbs: []string{"get"}},
	// Events on the pods and on the Lease; the claimers' miss Events,
	// counted into the misses metric.
	{Group: "", Resource: "events", Verbs: []string{"create", "patch", "list", "watch"}},
	// Leader election.
	{Group: "coordination.k8s.io", Resource: "leases", Verbs: []string{"get", "create", "update"}},
}

// StatusAccess is what `tether pool status` reads.
var StatusAccess = []contract.Permission{
	{Group: "", Resource: "pods", Verbs: []string{"list"}},
	{Group: "", Resource: "events", Verbs: []string{"list"}},
}

// PolicyRules returns ps as RBAC rules, one per permission.
func PolicyRules(ps []contract.Permission) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, 0, len(ps))
	for _, p := range ps {
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{p.Group}, Resources: []string{p.Resource}, Verbs: append([]string(nil), p.Verbs...)})
	}
	return out
}
