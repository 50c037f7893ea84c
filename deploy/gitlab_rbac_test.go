package deploy

import (
	"bytes"
	"maps"
	"os"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/tether-ci/tether/integration/gitlab"
)

// TestGitLabRBAC: deploy/gitlab/rbac.yaml is one ServiceAccount bound to
// one Role that grants exactly what the GitLab driver does (gitlab.Permissions,
// which its prepare checks), no more: no ConfigMaps, no Secrets.
func TestGitLabRBAC(t *testing.T) {
	b, err := os.ReadFile("../" + gitlab.RBACFile)
	if err != nil {
		t.Fatal(err)
	}
	var (
		sa      []*corev1.ServiceAccount
		role    []*rbacv1.Role
		binding []*rbacv1.RoleBinding
	)
	for _, o := range decodeAll(t, bytes.NewReader(b)) {
		switch o := o.(type) {
		case *corev1.ServiceAccount:
			sa = append(sa, o)
		case *rbacv1.Role:
			role = append(role, o)
		case *rbacv1.RoleBinding:
			binding = append(binding, o)
		default:
			t.Errorf("unexpected %T", o)
		}
	}
	if len(sa) != 1 || len(role) != 1 || len(binding) != 1 {
		t.Fatalf("%d ServiceAccounts, %d Roles, %d RoleBindings; want one each", len(sa), len(role), len(binding))
	}
	ns := sa[0].Namespace
	if role[0].Namespace != ns || binding[0].Namespace != ns {
		t.Errorf("namespaces %q %q %q differ", ns, role[0].Namespace, binding[0].Namespace)
	}
	s := binding[0].Subjects
	if len(s) != 1 || s[0].Kind != "ServiceAccount" || s[0].Name != sa[0].Name || s[0].Namespace != ns ||
		binding[0].RoleRef.Kind != "Role" || binding[0].RoleRef.Name != role[0].Name {
		t.Errorf("binding %+v does not bind service account %s/%s to role %s", binding[0], ns, sa[0].Name, role[0].Name)
	}
	granted := map[string][]string{}
	for _, r := range role[0].Rules {
		if len(r.APIGroups) != 1 || len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			t.Errorf("rule %+v: want one API group, no resource names", r)
			continue
		}
		for _, res := range r.Resources {
			k := groupResource(r.APIGroups[0], res)
			granted[k] = append(granted[k], r.Verbs...)
		}
	}
	want := map[string][]string{}
	for _, p := range gitlab.Permissions() {
		k := groupResource(p.Group, p.Resource)
		want[k] = append(want[k], p.Verbs...)
	}
	for _, m := range []map[string][]string{granted, want} {
		for k := range m {
			slices.Sort(m[k])
		}
	}
	if !maps.EqualFunc(granted, want, slices.Equal) {
		t.Errorf("the Role grants %v; the driver does %v", granted, want)
	}
}

// groupResource names resource of API group group as kubectl does
// (poddisruptionbudgets.policy; a core resource alone).
func groupResource(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}
