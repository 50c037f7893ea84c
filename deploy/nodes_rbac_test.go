package deploy

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tether-ci/tether/integration/actions"
	"github.com/tether-ci/tether/integration/gitlab"
	"github.com/tether-ci/tether/internal/contract"
	"github.com/tether-ci/tether/internal/poolctl"
)

// nodeReadObjects are the ClusterRoles and ClusterRoleBindings among objs;
// other counts the rest.
func nodeReadObjects(objs []runtime.Object) (roles []*rbacv1.ClusterRole, binds []*rbacv1.ClusterRoleBinding, other int) {
	for _, o := range objs {
		switch o := o.(type) {
		case *rbacv1.ClusterRole:
			roles = append(roles, o)
		case *rbacv1.ClusterRoleBinding:
			binds = append(binds, o)
		default:
			other++
		}
	}
	return roles, binds, other
}

// checkNodeRead checks one ClusterRole granting exactly contract.NodeRead
// and one ClusterRoleBinding of it to the ServiceAccounts want.
func checkNodeRead(t *testing.T, roles []*rbacv1.ClusterRole, binds []*rbacv1.ClusterRoleBinding, want []rbacv1.Subject) {
	t.Helper()
	if len(roles) != 1 || len(binds) != 1 {
		t.Fatalf("%d ClusterRoles, %d ClusterRoleBindings; want one each", len(roles), len(binds))
	}
	if rules := poolctl.PolicyRules([]contract.Permission{contract.NodeRead()}); !reflect.DeepEqual(roles[0].Rules, rules) {
		t.Errorf("ClusterRole rules %+v, want exactly %+v", roles[0].Rules, rules)
	}
	b := binds[0]
	if b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != roles[0].Name || b.RoleRef.APIGroup != rbacv1.GroupName {
		t.Errorf("binding refers to %+v, want ClusterRole %s", b.RoleRef, roles[0].Name)
	}
	if !reflect.DeepEqual(b.Subjects, want) {
		t.Errorf("binding subjects %+v, want %+v", b.Subjects, want)
	}
}

// serviceAccounts are the ServiceAccounts of the manifest file (relative
// to the repository) as binding subjects.
func serviceAccounts(t *testing.T, file string) []rbacv1.Subject {
	t.Helper()
	b, err := os.ReadFile("../" + file)
	if err != nil {
		t.Fatal(err)
	}
	var out []rbacv1.Subject
	for _, o := range decodeAll(t, bytes.NewReader(b)) {
		if sa, ok := o.(*corev1.ServiceAccount); ok {
			out = append(out, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace})
		}
	}
	return out
}

// TestNodeReadRBAC: deploy/nodes/rbac.yaml is one ClusterRole granting
// exactly contract.NodeRead (get on nodes), bound to the ServiceAccounts
// of the GitLab and Actions Roles, and nothing else.
func TestNodeReadRBAC(t *testing.T) {
	b, err := os.ReadFile("../" + contract.NodeReadRBACFile)
	if err != nil {
		t.Fatal(err)
	}
	roles, binds, other := nodeReadObjects(decodeAll(t, bytes.NewReader(b)))
	if other != 0 {
		t.Errorf("%d objects other than the ClusterRole and its binding", other)
	}
	want := append(serviceAccounts(t, gitlab.RBACFile), serviceAccounts(t, actions.RBACFile)...)
	if len(want) != 2 {
		t.Fatalf("ServiceAccounts of the integrations' RBAC: %+v, want two", want)
	}
	checkNodeRead(t, roles, binds, want)
}

// The pool chart's nodeReader.serviceAccounts: none by default (no
// cluster-scoped object); given, one ClusterRole granting exactly
// contract.NodeRead bound to them in the release namespace.
func TestPoolHelmNodeReader(t *testing.T) {
	roles, binds, _ := nodeReadObjects(helmTemplate(t, poolChart, "ci"))
	if len(roles)+len(binds) != 0 {
		t.Errorf("the chart's defaults render %d ClusterRoles and %d bindings, want none", len(roles), len(binds))
	}
	objs := helmTemplate(t, poolChart, "ci", "nodeReader.serviceAccounts={arc-runner,gitlab-runner}")
	roles, binds, _ = nodeReadObjects(objs)
	checkNodeRead(t, roles, binds, []rbacv1.Subject{
		{Kind: rbacv1.ServiceAccountKind, Name: "arc-runner", Namespace: "ci"},
		{Kind: rbacv1.ServiceAccountKind, Name: "gitlab-runner", Namespace: "ci"},
	})
	if !strings.HasPrefix(roles[0].Name, "ci-") {
		t.Errorf("ClusterRole %s: want the release namespace in its name (one per release)", roles[0].Name)
	}
}

// TestNodeReadIsWhatTheCodeCalls: every use of nodes in the project's
// programs (client-go's CoreV1().Nodes(), outside tests) is a call of a
// verb contract.NodeRead names, so the ClusterRole above is exactly what
// the code needs; and there is at least one (else it needs none).
func TestNodeReadIsWhatTheCodeCalls(t *testing.T) {
	verbs := map[string]bool{}
	for _, dir := range []string{"client", "integration", "internal", "cmd", "settings"} {
		err := filepath.WalkDir(filepath.Join("..", dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			// The API layer hands Nodes() on (its NodeInterface has only
			// the verbs callers may use); the calls are its callers'.
			if filepath.ToSlash(filepath.Dir(path)) == "../client/kube/kubeapi" || filepath.ToSlash(filepath.Dir(path)) == "../client/kube/kubeapi/clientset" {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				return err
			}
			calls, withVerb := 0, 0
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					if s, ok := n.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Nodes" && len(n.Args) == 0 {
						calls++
					}
				case *ast.SelectorExpr:
					if c, ok := n.X.(*ast.CallExpr); ok {
						if s, ok := c.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Nodes" && len(c.Args) == 0 {
							withVerb++
							verbs[strings.ToLower(n.Sel.Name)] = true
						}
					}
				}
				return true
			})
			if calls != withVerb {
				t.Errorf("%s: Nodes() used other than as Nodes().Verb(…): this test cannot tell what it does", path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(verbs) == 0 {
		t.Fatal("no code reads nodes: the node reader's RBAC is not needed")
	}
	allowed := contract.NodeRead().Verbs
	for v := range verbs {
		if !slices.Contains(allowed, v) {
			t.Errorf("the code calls %s on nodes; contract.NodeRead grants %v", v, allowed)
		}
	}
}
