package deploy

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/tether-ci/tether/internal/pool"
	"github.com/tether-ci/tether/internal/poolctl"
)

const poolChart = "helm/tether-pool"

// poolObjects are the objects of the pool controller's chart or manifests.
type poolObjects struct {
	sa          []*corev1.ServiceAccount
	roles       []*rbacv1.Role
	bindings    []*rbacv1.RoleBinding
	configMaps  []*corev1.ConfigMap
	deployments []*appsv1.Deployment
	other       []runtime.Object
}

func sortPoolObjects(objs []runtime.Object) poolObjects {
	var r poolObjects
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.ServiceAccount:
			r.sa = append(r.sa, o)
		case *rbacv1.Role:
			r.roles = append(r.roles, o)
		case *rbacv1.RoleBinding:
			r.bindings = append(r.bindings, o)
		case *corev1.ConfigMap:
			r.configMaps = append(r.configMaps, o)
		case *appsv1.Deployment:
			r.deployments = append(r.deployments, o)
		default:
			r.other = append(r.other, o)
		}
	}
	return r
}

// checkPoolObjects checks what the chart and the manifests must both
// hold: one ServiceAccount bound to one Role granting exactly
// poolctl.Access, a ConfigMap whose pools.yaml `tether pool check`
// accepts, and a Deployment running `tether pool serve` on it as a
// non-root user with a read-only root.
func checkPoolObjects(t *testing.T, r poolObjects, ns string) (*appsv1.Deployment, []pool.Pool) {
	t.Helper()
	if len(r.sa) != 1 || len(r.roles) != 1 || len(r.bindings) != 1 || len(r.configMaps) != 1 || len(r.deployments) != 1 || len(r.other) != 0 {
		t.Fatalf("want one ServiceAccount, Role, RoleBinding, ConfigMap and Deployment; got %d %d %d %d %d and %v",
			len(r.sa), len(r.roles), len(r.bindings), len(r.configMaps), len(r.deployments), r.other)
	}
	sa, role, rb, cm, d := r.sa[0], r.roles[0], r.bindings[0], r.configMaps[0], r.deployments[0]
	if want := poolctl.PolicyRules(poolctl.Access); !reflect.DeepEqual(role.Rules, want) {
		t.Errorf("role rules %+v,\nwant exactly the controller's access %+v", role.Rules, want)
	}
	for _, o := range []string{sa.Namespace, role.Namespace, rb.Namespace, cm.Namespace, d.Namespace} {
		if o != ns {
			t.Errorf("an object in namespace %q, want %q", o, ns)
		}
	}
	if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != role.Name || len(rb.Subjects) != 1 ||
		rb.Subjects[0].Kind != "ServiceAccount" || rb.Subjects[0].Name != sa.Name || rb.Subjects[0].Namespace != ns {
		t.Errorf("role binding %+v does not bind %s to %s", rb, sa.Name, role.Name)
	}
	pools, err := pool.Parse("pools.yaml", []byte(cm.Data["pools.yaml"]))
	if err != nil {
		t.Errorf("the ConfigMap's pools file: %v", err)
	}
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != sa.Name || len(pod.Containers) != 1 {
		t.Fatalf("serviceAccountName %q, %d containers", pod.ServiceAccountName, len(pod.Containers))
	}
	c := pod.Containers[0]
	if !slices.Equal(c.Command, []string{"/tether", "pool", "serve"}) || !slices.Contains(c.Args, "--config=/etc/tether-pool/pools.yaml") {
		t.Errorf("command %q args %q", c.Command, c.Args)
	}
	mounted := false
	for _, v := range pod.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == cm.Name {
			for _, m := range c.VolumeMounts {
				mounted = mounted || m.Name == v.Name && m.MountPath == "/etc/tether-pool"
			}
		}
	}
	if !mounted {
		t.Errorf("the ConfigMap %s is not mounted at /etc/tether-pool", cm.Name)
	}
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Error("the controller may run as root")
	}
	if sc := c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("container security context %+v", sc)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		t.Error("want at least two replicas by default: leader election makes the second a standby")
	}
	for _, l := range []map[string]string{sa.Labels, role.Labels, d.Labels, d.Spec.Template.Labels} {
		if l["app.kubernetes.io/managed-by"] == "tether" {
			t.Error("the controller's own objects carry the label that marks objects tether gc deletes")
		}
	}
	return d, pools
}

func poolTemplate(t *testing.T, ns string, set ...string) poolObjects {
	t.Helper()
	return sortPoolObjects(helmTemplate(t, poolChart, ns, set...))
}

func TestPoolHelmLint(t *testing.T) {
	for _, set := range [][]string{nil, {"replicas=1", "pod.hostNetwork=true", "extraArgs={--backoff-max=1m}", "nodeReader.serviceAccounts={arc-runner}"}} {
		args := []string{"lint", "--strict", poolChart}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		if out, err := runHelm(t, args...); err != nil {
			t.Errorf("helm %v: %v\n%s", args, err, out)
		}
	}
}

// The chart's defaults: least privilege, a valid pools file, the CLI
// image at the chart's appVersion, metrics on the chart's port.
func TestPoolHelmTemplateDefaults(t *testing.T) {
	d, pools := checkPoolObjects(t, poolTemplate(t, "ci"), "ci")
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != "ghcr.io/tether-ci/tether:dev" {
		t.Errorf("image %q", c.Image)
	}
	want := []string{"--config=/etc/tether-pool/pools.yaml", "--namespace=ci", "--lease-name=tether-pool", "--metrics-address=:9090", "--log-format=json"}
	if !slices.Equal(c.Args, want) {
		t.Errorf("args %q, want %q", c.Args, want)
	}
	if len(pools) != 1 || pools[0].Name != "default" || pools[0].Size != 2 {
		t.Errorf("default pools %+v", pools)
	}
}

// Pools given as values reach the pools file as `tether pool check` reads
// them.
func TestPoolHelmTemplatePools(t *testing.T) {
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(`
pools:
- name: small
  image: alpine:3
  size: 3
  max-idle: 10m
  cpu: 500m
  node-selector: {disk: ssd}
- name: big
  image: example.org/big:1
  size: 1
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runHelm(t, "template", "rel", poolChart, "--namespace", "ci", "--values", values, "--set", "image.tag=v1", "--set", "metrics.port=9100")
	if err != nil {
		t.Fatal(err)
	}
	d, pools := checkPoolObjects(t, sortPoolObjects(decodeAll(t, strings.NewReader(out))), "ci")
	if len(pools) != 2 || pools[0].Name != "small" || pools[0].Size != 3 || pools[0].CPU != "500m" || pools[1].Image != "example.org/big:1" {
		t.Errorf("pools %+v", pools)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != "ghcr.io/tether-ci/tether:v1" || !slices.Contains(c.Args, "--metrics-address=:9100") || c.Ports[0].ContainerPort != 9100 {
		t.Errorf("image %q args %q ports %+v", c.Image, c.Args, c.Ports)
	}
}

func TestPoolHelmTemplateRejectsBadValues(t *testing.T) {
	for _, c := range []struct{ set, msg string }{
		{"pools=null", "pools: give at least one pool"},
		{"serviceAccount.create=false", "serviceAccount.name is required"},
	} {
		out, err := runHelm(t, "template", "rel", poolChart, "--set", c.set)
		if err == nil {
			t.Errorf("--set %s accepted:\n%s", c.set, out)
		} else if !strings.Contains(err.Error(), c.msg) {
			t.Errorf("--set %s: error %v does not mention %q", c.set, err, c.msg)
		}
	}
}

// The plain manifests grant exactly what the chart grants, and their
// kustomization lists every one and pins the image.
func TestPoolPlainManifests(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("pool", "*.yaml"))
	var objs []runtime.Object
	var names []string
	for _, f := range files {
		if filepath.Base(f) == kustomization {
			continue
		}
		names = append(names, filepath.Base(f))
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, decodeAll(t, bytes.NewReader(b))...)
	}
	d, _ := checkPoolObjects(t, sortPoolObjects(objs), "")
	b, err := os.ReadFile(filepath.Join("pool", kustomization))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
		Images     []struct {
			Name   string `json:"name"`
			NewTag string `json:"newTag"`
		} `json:"images"`
	}
	if err := sigsyaml.UnmarshalStrict(b, &k); err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	if got := slices.Sorted(slices.Values(k.Resources)); !slices.Equal(got, names) {
		t.Errorf("kustomization resources %v, want %v", got, names)
	}
	if image := d.Spec.Template.Spec.Containers[0].Image; len(k.Images) != 1 || image != k.Images[0].Name+":"+k.Images[0].NewTag {
		t.Errorf("images %+v do not pin the Deployment's image %q", k.Images, image)
	}
}
