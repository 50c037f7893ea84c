package gitlab

import (
	"context"
	"slices"
	"strings"

	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/client/kube/kubeapi"
	gitlab "github.com/tether-ci/tether/integration/gitlab/internal/runnerapi"
)

// rulesAllowAll asks the API server, in one SelfSubjectRulesReview, what
// the driver's identity may do in namespace ns, and reports whether that
// covers every permission of gitlab.Access. false (a permission not
// covered, an incomplete answer from an authorizer that cannot list its
// rules, or no answer) means: ask permission by permission.
func rulesAllowAll(ctx context.Context, cs kubeapi.Interface, ns string) bool {
	r, err := cs.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx,
		&authzv1.SelfSubjectRulesReview{Spec: authzv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
	if err != nil || r.Status.Incomplete {
		return false
	}
	for _, p := range gitlab.Access {
		if !slices.ContainsFunc(p.Verbs, func(verb string) bool { return rulesAllow(r.Status.ResourceRules, verb, p.Group, p.Resource) }) {
			return false
		}
	}
	return true
}

// rulesAllow reports whether rules grant verb on resource of the API group
// group ("" the core group; "pods/attach" for a subresource) for every
// name, as RBAC matches them: "*" for any verb, group or resource, "*/SUB"
// for a subresource of any resource.
func rulesAllow(rules []authzv1.ResourceRule, verb, group, resource string) bool {
	_, sub, _ := strings.Cut(resource, "/")
	for _, r := range rules {
		if len(r.ResourceNames) > 0 {
			continue // some objects only
		}
		if !slices.Contains(r.Verbs, verb) && !slices.Contains(r.Verbs, "*") {
			continue
		}
		if !slices.Contains(r.APIGroups, group) && !slices.Contains(r.APIGroups, "*") {
			continue
		}
		if slices.ContainsFunc(r.Resources, func(res string) bool {
			return res == "*" || res == resource || sub != "" && res == "*/"+sub
		}) {
			return true
		}
	}
	return false
}
