package gitlab

import (
	"testing"

	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
)

// roleRules are the rules of the Role in deploy/gitlab/rbac.yaml as a
// SelfSubjectRulesReview reports them, plus what every identity may do.
var roleRules = []authzv1.ResourceRule{
	{Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews"}},
	{Verbs: []string{"create", "get", "list", "watch", "delete", "update"}, APIGroups: []string{""}, Resources: []string{"pods"}},
	{Verbs: []string{"create", "get"}, APIGroups: []string{""}, Resources: []string{"pods/attach"}},
	{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}},
	{Verbs: []string{"list", "watch", "create"}, APIGroups: []string{""}, Resources: []string{"events"}},
	{Verbs: []string{"create"}, APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}},
}

// withRules makes cs answer SelfSubjectRulesReviews with rules
// (incomplete: as an authorizer that cannot list them) and counts the
// access reviews asked.
func withRules(t *testing.T, cs *fake.Clientset, rules []authzv1.ResourceRule, incomplete bool) *int {
	t.Helper()
	reviews := 0
	cs.PrependReactor("create", "selfsubjectrulesreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authzv1.SelfSubjectRulesReview).DeepCopy()
		if r.Spec.Namespace != "ci" {
			t.Errorf("rules review in namespace %q, want ci", r.Spec.Namespace)
		}
		r.Status = authzv1.SubjectRulesReviewStatus{ResourceRules: rules, Incomplete: incomplete}
		return true, r, nil
	})
	cs.PrependReactor("create", "selfsubjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		reviews++
		return false, nil, nil // on to the authorizer's answer
	})
	return &reviews
}

// The Role's rules answer the whole check in one request; an incomplete
// answer, or rules that lack something, are checked verb by verb, so
// what is missing is named as before.
func TestGitLabAccessFromRules(t *testing.T) {
	const user = "system:serviceaccount:ci:gitlab-runner"
	cs := fakeAuthorizer(t, user, nil, "get pods/attach", "create pods/attach")
	reviews := withRules(t, cs, roleRules, false)
	rep, err := checkGitlabAccess(t.Context(), clientset.Wrap(cs), "ci")
	if err != nil || rep.Err() != nil || rep.Warning() != "" || *reviews != 0 {
		t.Fatalf("full Role: %+v, %v after %d access reviews; want no finding and no access review", rep, err, *reviews)
	}
	if n := len(cs.Actions()); n != 1 {
		t.Errorf("full Role: %d requests, want 1 (%v)", n, cs.Actions())
	}

	cs = fakeAuthorizer(t, user, nil, "get pods/attach", "create pods/attach")
	reviews = withRules(t, cs, roleRules, true)
	rep, _ = checkGitlabAccess(t.Context(), clientset.Wrap(cs), "ci")
	if rep.Err() == nil || *reviews == 0 {
		t.Errorf("incomplete rules: %+v after %d access reviews; want the authorizer's answer (pods/attach missing)", rep, *reviews)
	}

	cs = fakeAuthorizer(t, user, nil, "get pods/attach", "create pods/attach")
	reviews = withRules(t, cs, roleRules[2:], false)
	rep, _ = checkGitlabAccess(t.Context(), clientset.Wrap(cs), "ci")
	if rep.Err() == nil || *reviews == 0 {
		t.Errorf("rules without pods: %+v after %d access reviews; want the per-verb check", rep, *reviews)
	}
}

func TestRulesAllow(t *testing.T) {
	for _, tc := range []struct {
		rule                  authzv1.ResourceRule
		verb, group, resource string
		want                  bool
	}{
		{authzv1.ResourceRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}, "get", "", "pods/attach", true},
		{authzv1.ResourceRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"*/attach"}}, "get", "", "pods/attach", true},
		{authzv1.ResourceRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"*/attach"}}, "get", "", "pods", false},
		{authzv1.ResourceRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}, "get", "", "pods/log", false},
		{authzv1.ResourceRule{Verbs: []string{"get"}, APIGroups: []string{"apps"}, Resources: []string{"pods"}}, "get", "", "pods", false},
		{authzv1.ResourceRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"p"}}, "get", "", "pods", false},
		{authzv1.ResourceRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}}, "get", "", "pods", false},
		{authzv1.ResourceRule{Verbs: []string{"create"}, APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}}, "create", "policy", "poddisruptionbudgets", true},
		{authzv1.ResourceRule{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"poddisruptionbudgets"}}, "create", "policy", "poddisruptionbudgets", false},
	} {
		if got := rulesAllow([]authzv1.ResourceRule{tc.rule}, tc.verb, tc.group, tc.resource); got != tc.want {
			t.Errorf("%+v allows %s %s/%s: %v, want %v", tc.rule, tc.verb, tc.group, tc.resource, got, tc.want)
		}
	}
}
