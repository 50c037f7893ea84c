//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestGitLabDriverWithItsRBAC: the driver does a whole job as the service
// account of deploy/gitlab/rbac.yaml, applied as docs/gitlab.md says (its
// namespace replaced), with a kubeconfig holding that account's token, not
// as cluster-admin: prepare (no warning about permissions), prepare again
// (the runner's retry: the pod left is replaced), a stage in the helper
// container and one in the build container, cleanup. The same
// Role without pods/attach fails prepare at once, as a system failure
// naming the identity and the missing verbs, before any pod exists.
func TestGitLabDriverWithItsRBAC(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-rbac")
	sa, role := applyGitLabRBAC(ctx, t, c, ns)
	kc := serviceAccountKubeconfig(ctx, t, c, ns, sa.Name)

	r := newRunnerStandIn(t, c, ns, nil)
	t.Cleanup(func() { r.cleanup(context.Background()) }) // as admin, whatever happens
	out, code := r.as(ctx, kc, "prepare")
	if code != 0 || strings.Contains(out, "WARNING: tether") {
		t.Fatalf("prepare as %s: exit %d\n%s", sa.Name, code, out)
	}
	podName := "tether-gitlab-r7-j" + r.jobID
	first, err := c.Client.CoreV1().Pods(ns).Get(ctx, podName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The runner tries prepare again after a failed one (cleanup between,
	// whose delete may still be under way): the pod left is replaced.
	out, code = r.as(ctx, kc, "prepare")
	if code != 0 || !strings.Contains(out, "is left from an earlier prepare of this job; replacing it") {
		t.Fatalf("prepare again as %s: exit %d\n%s", sa.Name, code, out)
	}
	if again, err := c.Client.CoreV1().Pods(ns).Get(ctx, podName, metav1.GetOptions{}); err != nil || again.UID == first.UID {
		t.Fatalf("after the second prepare: %v, UID %s (first %s); want a new pod", err, again.GetUID(), first.UID)
	}
	for _, s := range []struct{ stage, body, want string }{
		{"get_sources", "git --version >/dev/null && echo helper-ok\n", "helper-ok"},
		{"step_script", "echo build-ok\n", "build-ok"},
	} {
		out, code := r.as(ctx, kc, "run", r.stageScript(s.stage, s.body, nil), s.stage)
		if code != 0 || !strings.Contains(out, s.want) {
			t.Errorf("run %s as %s: exit %d, want 0 and %q\n%s", s.stage, sa.Name, code, s.want, out)
		}
	}
	if out, code := r.as(ctx, kc, "cleanup"); code != 0 {
		t.Fatalf("cleanup as %s: exit %d\n%s", sa.Name, code, out)
	}
	c.WaitFor(ctx, t, "pod "+podName+" deleted", func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().Pods(ns).Get(ctx, podName, metav1.GetOptions{})
		return apierrors.IsNotFound(err), ignoreNotFound(err)
	})

	// The Role without pods/attach, bound to another account.
	narrow := role.DeepCopy()
	narrow.ObjectMeta = metav1.ObjectMeta{Name: "no-attach", Namespace: ns}
	narrow.Rules = nil
	for _, rule := range role.Rules {
		if rule.Resources[0] != "pods/attach" {
			narrow.Rules = append(narrow.Rules, rule)
		}
	}
	createRoleFor(ctx, t, c, narrow, "no-attach")
	kc2 := serviceAccountKubeconfig(ctx, t, c, ns, "no-attach")
	r2 := newRunnerStandIn(t, c, ns, nil)
	t.Cleanup(func() { r2.cleanup(context.Background()) })
	out, code = r2.as(ctx, kc2, "prepare")
	for _, want := range []string{"ERROR: tether:", "system:serviceaccount:" + ns + ":no-attach", "may not get or create pods/attach", "deploy/gitlab/rbac.yaml"} {
		if code != standInSystemFailure || !strings.Contains(out, want) {
			t.Errorf("prepare without pods/attach: exit %d, output lacks %q:\n%s", code, want, out)
		}
	}
	pod2 := "tether-gitlab-r7-j" + r2.jobID
	if _, err := c.Client.CoreV1().Pods(ns).Get(ctx, pod2, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod %s after the refused prepare: %v (want not found)", pod2, err)
	}
}

// as runs `tether gitlab ARGS` with the runner's environment and the
// kubeconfig kc (the command line wins over the driver config's), and
// returns its stdout and stderr together and its exit code.
func (r *runnerStandIn) as(ctx context.Context, kc string, args ...string) (string, int) {
	r.t.Helper()
	cmd := r.command(ctx, append([]string{args[0], "--kubeconfig", kc}, args[1:]...)...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		r.t.Fatalf("%v: %v", args, err)
	}
	return string(out), 0
}

// applyGitLabRBAC creates deploy/gitlab/rbac.yaml's objects in ns, as
// docs/gitlab.md applies it (sed on the namespace), and returns its
// ServiceAccount and Role.
func applyGitLabRBAC(ctx context.Context, t *testing.T, c *Cluster, ns string) (*corev1.ServiceAccount, *rbacv1.Role) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "gitlab", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte("namespace: gitlab-ci"), []byte("namespace: "+ns))
	var (
		sa      corev1.ServiceAccount
		role    rbacv1.Role
		binding rbacv1.RoleBinding
	)
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for _, obj := range []any{&sa, &role, &binding} {
		if err := dec.Decode(obj); err != nil {
			t.Fatalf("deploy/gitlab/rbac.yaml: %v", err)
		}
	}
	if sa.Kind != "ServiceAccount" || role.Kind != "Role" || binding.Kind != "RoleBinding" {
		t.Fatalf("deploy/gitlab/rbac.yaml holds %s, %s, %s; want ServiceAccount, Role, RoleBinding", sa.Kind, role.Kind, binding.Kind)
	}
	if _, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.RbacV1().Roles(ns).Create(ctx, &role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.RbacV1().RoleBindings(ns).Create(ctx, &binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return &sa, &role
}

// createRoleFor creates role and a ServiceAccount named sa bound to it.
func createRoleFor(ctx context.Context, t *testing.T, c *Cluster, role *rbacv1.Role, sa string) {
	t.Helper()
	ns := role.Namespace
	if _, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
	}
	if _, err := c.Client.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// serviceAccountKubeconfig writes a kubeconfig that reaches the node as
// service account ns/sa (a token of it) and returns its path.
func serviceAccountKubeconfig(ctx context.Context, t *testing.T, c *Cluster, ns, sa string) string {
	t.Helper()
	expiry := int64(3600)
	tok, err := c.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of %s/%s: %v", ns, sa, err)
	}
	ca := c.Config.CAData
	if len(ca) == 0 && c.Config.CAFile != "" {
		if ca, err = os.ReadFile(c.Config.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: c.Config.Host, CertificateAuthorityData: ca}
	cfg.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: sa, Namespace: ns}
	cfg.CurrentContext = "e2e"
	path := filepath.Join(t.TempDir(), sa+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
