// Package deploy holds the manifests and the Helm chart of `tether gc`; this
// test checks them with the real helm binary and Kubernetes' own decoders.
package deploy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	kyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	sigsyaml "sigs.k8s.io/yaml"
)

const chart = "helm/tether-gc"

// leastPrivilege is the only access `tether gc` needs.
var leastPrivilege = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"list", "delete"}},
}

var helmOnce struct {
	sync.Once
	path string
	err  error
}

// helm installs helm with scripts/tools.sh (from the Go module proxy, cached
// outside the repository) and returns its path. Failing to get helm fails
// the test: there is no silent skip.
func helm(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, "../scripts/tools.sh", "helm")
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			helmOnce.err = errors.New("scripts/tools.sh helm failed: " + err.Error() + "\n" + stderr.String())
			return
		}
		helmOnce.path = strings.TrimSpace(string(out))
	})
	if helmOnce.err != nil {
		t.Fatalf("cannot install helm (needs the Go module proxy): %v", helmOnce.err)
	}
	return helmOnce.path
}

func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helm(t), args...)
	// A clean helm home: no repositories or plugins of the machine.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	if err != nil {
		return out.String(), errors.New(err.Error() + ": " + stderr.String())
	}
	return out.String(), nil
}

// decodeAll strictly decodes every YAML document (unknown fields are
// errors) into typed Kubernetes objects.
func decodeAll(t *testing.T, r io.Reader) []runtime.Object {
	t.Helper()
	ser := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
		kjson.SerializerOptions{Yaml: true, Strict: true})
	yr := kyaml.NewYAMLReader(bufio.NewReader(r))
	var objs []runtime.Object
	for {
		doc, err := yr.Read()
		if err == io.EOF {
			return objs
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, _, err := ser.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("decode %s: %v", doc, err)
		}
		objs = append(objs, obj)
	}
}

func stripComments(doc []byte) []byte {
	var out []byte
	for _, l := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(append(out, l...), '\n')
		}
	}
	return out
}

type rendered struct {
	sa       []*corev1.ServiceAccount
	roles    []*rbacv1.Role
	bindings []*rbacv1.RoleBinding
	cRoles   []*rbacv1.ClusterRole
	cBinds   []*rbacv1.ClusterRoleBinding
	cronJobs []*batchv1.CronJob
	other    []runtime.Object
}

func sortObjects(t *testing.T, objs []runtime.Object) rendered {
	var r rendered
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.ServiceAccount:
			r.sa = append(r.sa, o)
		case *rbacv1.Role:
			r.roles = append(r.roles, o)
		case *rbacv1.RoleBinding:
			r.bindings = append(r.bindings, o)
		case *rbacv1.ClusterRole:
			r.cRoles = append(r.cRoles, o)
		case *rbacv1.ClusterRoleBinding:
			r.cBinds = append(r.cBinds, o)
		case *batchv1.CronJob:
			r.cronJobs = append(r.cronJobs, o)
		default:
			r.other = append(r.other, o)
		}
	}
	if len(r.cronJobs) != 1 {
		t.Fatalf("%d CronJobs, want 1", len(r.cronJobs))
	}
	return r
}

func template(t *testing.T, ns string, set ...string) rendered {
	t.Helper()
	return sortObjects(t, helmTemplate(t, chart, ns, set...))
}

// helmTemplate renders chart as release "rel" in namespace ns with the
// --set values set, and decodes its objects.
func helmTemplate(t *testing.T, chart, ns string, set ...string) []runtime.Object {
	t.Helper()
	args := []string{"template", "rel", chart, "--namespace", ns}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := runHelm(t, args...)
	if err != nil {
		t.Fatalf("helm %v: %v", args, err)
	}
	return decodeAll(t, strings.NewReader(out))
}

func TestHelmLint(t *testing.T) {
	for _, set := range [][]string{
		nil,
		{"allNamespaces=true"},
		{"namespaces={a,b}", "dryRun=server", "pod.hostNetwork=true", "pod.env[0].name=KUBERNETES_SERVICE_HOST", "pod.env[0].value=127.0.0.1", "pod.nodeSelector.disk=ssd"},
	} {
		args := []string{"lint", "--strict", chart}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		if out, err := runHelm(t, args...); err != nil {
			t.Errorf("helm %v: %v\n%s", args, err, out)
		}
	}
}

// Defaults: one namespace (the release's), least-privilege Role, a
// Forbid CronJob running /tether gc from the CLI image (tagged with the
// chart's appVersion), no extras.
func TestHelmTemplateDefaults(t *testing.T) {
	r := template(t, "ci")
	if len(r.other) != 0 || len(r.cRoles) != 0 || len(r.cBinds) != 0 {
		t.Fatalf("unexpected objects: %v %v %v", r.other, r.cRoles, r.cBinds)
	}
	if len(r.sa) != 1 || len(r.roles) != 1 || len(r.bindings) != 1 {
		t.Fatalf("want 1 ServiceAccount, Role, RoleBinding; got %d %d %d", len(r.sa), len(r.roles), len(r.bindings))
	}
	sa, role, rb, cj := r.sa[0], r.roles[0], r.bindings[0], r.cronJobs[0]
	if sa.Namespace != "ci" || role.Namespace != "ci" || rb.Namespace != "ci" || cj.Namespace != "ci" {
		t.Error("objects outside the release namespace")
	}
	if !reflect.DeepEqual(role.Rules, leastPrivilege) {
		t.Errorf("role rules %+v, want %+v", role.Rules, leastPrivilege)
	}
	if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != role.Name ||
		!reflect.DeepEqual(rb.Subjects, []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: "ci"}}) {
		t.Errorf("role binding %+v", rb)
	}
	checkCronJob(t, cj, sa.Name)
	if cj.Spec.Schedule != "*/5 * * * *" {
		t.Errorf("schedule %q", cj.Spec.Schedule)
	}
	pod := cj.Spec.JobTemplate.Spec.Template.Spec
	c := pod.Containers[0]
	if c.Image != "ghcr.io/tether-ci/tether:dev" { // repository:appVersion
		t.Errorf("image %q", c.Image)
	}
	wantArgs := []string{"--namespace=ci", "--grace=10m", "--resources=pods,configmaps,secrets", "--log-format=json", "--chunk-size=100"}
	if !slices.Equal(c.Args, wantArgs) {
		t.Errorf("args %q, want %q", c.Args, wantArgs)
	}
	if pod.HostNetwork || len(c.Env) != 0 || len(pod.NodeSelector) != 0 || len(pod.Tolerations) != 0 || pod.Affinity != nil {
		t.Errorf("extra pod settings on by default: %+v", pod)
	}
	for _, o := range []map[string]string{sa.Labels, role.Labels, cj.Labels, cj.Spec.JobTemplate.Spec.Template.Labels} {
		if o["app.kubernetes.io/managed-by"] == "tether" {
			t.Error("the cleaner's own objects carry the label that marks objects it deletes")
		}
	}
}

// checkCronJob checks what every rendering and manifest must hold.
func checkCronJob(t *testing.T, cj *batchv1.CronJob, sa string) {
	t.Helper()
	if cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
		t.Errorf("concurrencyPolicy %q, want Forbid", cj.Spec.ConcurrencyPolicy)
	}
	pod := cj.Spec.JobTemplate.Spec.Template.Spec
	if pod.ServiceAccountName != sa || pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("serviceAccountName %q restartPolicy %q", pod.ServiceAccountName, pod.RestartPolicy)
	}
	if len(pod.Containers) != 1 || !slices.Equal(pod.Containers[0].Command, []string{"/tether", "gc"}) {
		t.Fatalf("containers %+v", pod.Containers)
	}
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Error("pod may run as root")
	}
	if sc := pod.Containers[0].SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("container security context %+v", sc)
	}
	if b := cj.Spec.JobTemplate.Spec.BackoffLimit; b == nil || *b != 0 {
		t.Error("failed runs are retried by the Job instead of the next schedule")
	}
	if d := cj.Spec.JobTemplate.Spec.ActiveDeadlineSeconds; d == nil || *d <= 0 {
		t.Error("no activeDeadlineSeconds: a hung run would block every later one (Forbid)")
	}
}

func TestHelmTemplateNamespacesAndOptions(t *testing.T) {
	r := template(t, "tether-system", "namespaces={ci-a,ci-b}", "grace=90s", "dryRun=true", "selector=tether.dev/runner=r1",
		"schedule=* * * * *", "image.repository=example.org/helper", "image.tag=v1", "image.pullPolicy=Never",
		"pod.hostNetwork=true", "pod.env[0].name=KUBERNETES_SERVICE_HOST", "pod.env[0].value=127.0.0.1",
		"pod.nodeSelector.kubernetes\\.io/hostname=localhost", "extraArgs={--chunk-size=7}")
	if len(r.roles) != 2 || len(r.bindings) != 2 {
		t.Fatalf("%d Roles, %d RoleBindings, want 2 each", len(r.roles), len(r.bindings))
	}
	for i, ns := range []string{"ci-a", "ci-b"} {
		if r.roles[i].Namespace != ns || r.bindings[i].Namespace != ns || !reflect.DeepEqual(r.roles[i].Rules, leastPrivilege) {
			t.Errorf("role/binding %d: %s %s %+v", i, r.roles[i].Namespace, r.bindings[i].Namespace, r.roles[i].Rules)
		}
		if s := r.bindings[i].Subjects; len(s) != 1 || s[0].Namespace != "tether-system" || s[0].Name != r.sa[0].Name {
			t.Errorf("binding subjects %+v", s)
		}
	}
	cj := r.cronJobs[0]
	checkCronJob(t, cj, r.sa[0].Name)
	pod := cj.Spec.JobTemplate.Spec.Template.Spec
	c := pod.Containers[0]
	want := []string{"--namespace=ci-a,ci-b", "--grace=90s", "--resources=pods,configmaps,secrets", "--log-format=json",
		"--chunk-size=100", "--dry-run", "--selector=tether.dev/runner=r1", "--chunk-size=7"}
	if !slices.Equal(c.Args, want) {
		t.Errorf("args %q, want %q", c.Args, want)
	}
	if cj.Spec.Schedule != "* * * * *" || c.Image != "example.org/helper:v1" || c.ImagePullPolicy != corev1.PullNever {
		t.Errorf("schedule %q image %q policy %q", cj.Spec.Schedule, c.Image, c.ImagePullPolicy)
	}
	if !pod.HostNetwork || pod.DNSPolicy != corev1.DNSClusterFirstWithHostNet ||
		!reflect.DeepEqual(c.Env, []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "127.0.0.1"}}) ||
		pod.NodeSelector["kubernetes.io/hostname"] != "localhost" {
		t.Errorf("pod settings not applied: hostNetwork %v dns %q env %+v nodeSelector %v", pod.HostNetwork, pod.DNSPolicy, c.Env, pod.NodeSelector)
	}
}

func TestHelmTemplateAllNamespaces(t *testing.T) {
	r := template(t, "tether-system", "allNamespaces=true", "dryRun=server")
	if len(r.roles) != 0 || len(r.bindings) != 0 || len(r.cRoles) != 1 || len(r.cBinds) != 1 {
		t.Fatalf("roles %d bindings %d clusterroles %d clusterbindings %d", len(r.roles), len(r.bindings), len(r.cRoles), len(r.cBinds))
	}
	if !reflect.DeepEqual(r.cRoles[0].Rules, leastPrivilege) {
		t.Errorf("cluster role rules %+v", r.cRoles[0].Rules)
	}
	b := r.cBinds[0]
	if b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != r.cRoles[0].Name ||
		!reflect.DeepEqual(b.Subjects, []rbacv1.Subject{{Kind: "ServiceAccount", Name: r.sa[0].Name, Namespace: "tether-system"}}) {
		t.Errorf("cluster role binding %+v", b)
	}
	args := r.cronJobs[0].Spec.JobTemplate.Spec.Template.Spec.Containers[0].Args
	if args[0] != "--all-namespaces" || !slices.Contains(args, "--dry-run=server") || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--namespace") }) {
		t.Errorf("args %q", args)
	}
}

// Cleaning only ConfigMaps needs only list/delete on them plus get on pods
// (the owner check).
func TestHelmTemplateResourcesNarrowRBAC(t *testing.T) {
	r := template(t, "ci", "resources={configmaps}")
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "delete"}},
	}
	if !reflect.DeepEqual(r.roles[0].Rules, want) {
		t.Errorf("rules %+v, want %+v", r.roles[0].Rules, want)
	}
	r = template(t, "ci", "resources={pods}")
	if !reflect.DeepEqual(r.roles[0].Rules, leastPrivilege[:1]) {
		t.Errorf("rules %+v, want %+v", r.roles[0].Rules, leastPrivilege[:1])
	}
}

func TestHelmTemplateRejectsBadValues(t *testing.T) {
	for _, c := range []struct{ set, msg string }{
		{"allNamespaces=true,namespaces={a}", "exclude each other"},
		{"grace=ten minutes", "grace"},
		{"grace=600", "grace"},
		{"dryRun=maybe", "dryRun"},
		{"resources={deployments}", "resources"},
		{"namespaces={Bad_NS}", "namespaces"},
		{"logFormat=xml", "logFormat"},
		{"serviceAccount.create=false", "serviceAccount.name is required"},
	} {
		out, err := runHelm(t, "template", "rel", chart, "--set", c.set)
		if err == nil {
			t.Errorf("--set %s accepted:\n%s", c.set, out)
		} else if !strings.Contains(err.Error(), c.msg) {
			t.Errorf("--set %s: error %v does not mention %q", c.set, err, c.msg)
		}
	}
}

// The plain manifests grant exactly what the chart grants and run the
// same command.
func TestPlainManifests(t *testing.T) {
	for _, dir := range []string{"namespaced", "cluster"} {
		t.Run(dir, func(t *testing.T) {
			var objs []runtime.Object
			files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
			if len(files) == 0 {
				t.Fatal("no manifests")
			}
			for _, f := range files {
				if filepath.Base(f) == kustomization {
					continue
				}
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				objs = append(objs, decodeAll(t, bytes.NewReader(b))...)
			}
			r := sortObjects(t, objs)
			if len(r.sa) != 1 {
				t.Fatalf("%d ServiceAccounts", len(r.sa))
			}
			cj := r.cronJobs[0]
			checkCronJob(t, cj, r.sa[0].Name)
			args := cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Args
			if dir == "namespaced" {
				if len(r.roles) != 1 || len(r.bindings) != 1 || len(r.cRoles)+len(r.cBinds) != 0 {
					t.Fatal("want exactly one Role and RoleBinding")
				}
				if !reflect.DeepEqual(r.roles[0].Rules, leastPrivilege) {
					t.Errorf("rules %+v", r.roles[0].Rules)
				}
				// No namespace anywhere: `kubectl apply -n NS` places it all.
				if r.sa[0].Namespace+r.roles[0].Namespace+r.bindings[0].Namespace+cj.Namespace+r.bindings[0].Subjects[0].Namespace != "" {
					t.Error("a namespaced manifest names a namespace")
				}
				if slices.Contains(args, "--all-namespaces") {
					t.Error("namespaced CronJob cleans all namespaces")
				}
				return
			}
			if len(r.cRoles) != 1 || len(r.cBinds) != 1 || len(r.roles)+len(r.bindings) != 0 {
				t.Fatal("want exactly one ClusterRole and ClusterRoleBinding")
			}
			if !reflect.DeepEqual(r.cRoles[0].Rules, leastPrivilege) {
				t.Errorf("rules %+v", r.cRoles[0].Rules)
			}
			s := r.cBinds[0].Subjects
			if len(s) != 1 || s[0].Name != r.sa[0].Name || s[0].Namespace != r.sa[0].Namespace || cj.Namespace != r.sa[0].Namespace {
				t.Errorf("binding subjects %+v, service account %s/%s, cronjob in %s", s, r.sa[0].Namespace, r.sa[0].Name, cj.Namespace)
			}
			if !slices.Contains(args, "--all-namespaces") {
				t.Error("cluster CronJob lacks --all-namespaces")
			}
		})
	}
}

// kustomization is the file `kubectl apply -k` reads in each manifest folder.
const kustomization = "kustomization.yaml"

// Each manifest folder's kustomization.yaml lists every manifest in it and
// pins the image the CronJob runs, with the same repository and tag.
func TestKustomizations(t *testing.T) {
	for _, dir := range []string{"namespaced", "cluster"} {
		t.Run(dir, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, kustomization))
			if err != nil {
				t.Fatal(err)
			}
			var k struct {
				APIVersion string   `json:"apiVersion"`
				Kind       string   `json:"kind"`
				Resources  []string `json:"resources"`
				Images     []struct {
					Name    string `json:"name"`
					NewTag  string `json:"newTag"`
					NewName string `json:"newName"`
				} `json:"images"`
			}
			if err := sigsyaml.UnmarshalStrict(b, &k); err != nil {
				t.Fatalf("%s/%s: %v", dir, kustomization, err)
			}
			if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
				t.Errorf("apiVersion %q kind %q", k.APIVersion, k.Kind)
			}
			files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
			var want []string
			var image string
			for _, f := range files {
				if filepath.Base(f) == kustomization {
					continue
				}
				want = append(want, filepath.Base(f))
				raw, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range decodeAll(t, bytes.NewReader(raw)) {
					if cj, ok := o.(*batchv1.CronJob); ok {
						image = cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image
					}
				}
			}
			slices.Sort(want)
			got := slices.Sorted(slices.Values(k.Resources))
			if !slices.Equal(got, want) {
				t.Errorf("resources %v, want every manifest of the folder %v", got, want)
			}
			if len(k.Images) != 1 || k.Images[0].NewName != "" || image != k.Images[0].Name+":"+k.Images[0].NewTag {
				t.Errorf("images %+v do not pin the CronJob's image %q", k.Images, image)
			}
		})
	}
}
