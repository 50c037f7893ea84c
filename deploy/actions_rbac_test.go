package deploy

import (
	"bytes"
	"maps"
	"os"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/tether-ci/tether/integration/actions"
)

// TestActionsRBAC: deploy/actions/rbac.yaml grants exactly what the
// Actions container hook does (actions.Access), no more.
func TestActionsRBAC(t *testing.T) {
	b, err := os.ReadFile("../" + actions.RBACFile)
	if err != nil {
		t.Fatal(err)
	}
	var roles []*rbacv1.Role
	var bindings int
	for _, o := range decodeAll(t, bytes.NewReader(b)) {
		switch o := o.(type) {
		case *rbacv1.Role:
			roles = append(roles, o)
		case *rbacv1.RoleBinding:
			bindings++
			if o.RoleRef.Kind != "Role" || o.RoleRef.Name != "tether-actions" {
				t.Errorf("binding %s refers to %+v", o.Name, o.RoleRef)
			}
		}
	}
	if len(roles) != 1 || bindings != 1 {
		t.Fatalf("%d Roles, %d RoleBindings; want one each", len(roles), bindings)
	}
	granted := map[string][]string{}
	for _, r := range roles[0].Rules {
		if len(r.APIGroups) != 1 || len(r.ResourceNames) > 0 {
			t.Errorf("rule %+v: want one API group, no resource names", r)
			continue
		}
		for _, res := range r.Resources {
			k := groupResource(r.APIGroups[0], res)
			granted[k] = append(granted[k], r.Verbs...)
		}
	}
	want := map[string][]string{}
	for _, p := range actions.Access {
		k := groupResource(p.Group, p.Resource)
		want[k] = append(want[k], p.Verbs...)
	}
	for _, m := range []map[string][]string{granted, want} {
		for k := range m {
			slices.Sort(m[k])
		}
	}
	if !maps.EqualFunc(granted, want, slices.Equal) {
		t.Errorf("the Role grants %v; the hook uses %v", granted, want)
	}
}
