//go:build e2e

package e2e

// tether gc on the real node: the cleaner's rules against the real
// apiserver (pagination, UID preconditions, dry runs, failed deletes), and
// the Helm chart installed with helm whose CronJob runs the CLI image
// in-cluster, plus its RBAC checked with a real service-account token.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/tether-ci/tether/internal/gc"
)

// gcNoScheduler is a scheduler that does not exist: pods naming it stay
// Pending and unbound, cost nothing, and are deleted at once.
const gcNoScheduler = "tether-e2e-no-scheduler"

// gcRepoRoot is the repository root as seen from test/e2e.
const gcRepoRoot = "../.."

// gcPod returns a pod for the cleaner to judge: unscheduled (Pending
// forever) unless command is given, with the TTL annotation when ttl is
// not nil.
func gcPod(ns, name string, ttl *string, command ...string) *corev1.Pod {
	var pod *corev1.Pod
	if len(command) == 0 {
		pod = SimplePod(ns, name, BusyboxImage, "sleep", "3600")
		pod.Spec.SchedulerName = gcNoScheduler
	} else {
		pod = SimplePod(ns, name, BusyboxImage, command...)
	}
	if ttl != nil {
		pod.Annotations = map[string]string{gc.TTLAnnotation: *ttl}
	}
	return pod
}

func gcStr(s string) *string { return &s }

// gcLabels are the labels Tether's Kubernetes backend puts on its objects.
func gcLabels(job string) map[string]string {
	return map[string]string{gc.ManagedByLabel: gc.ManagedByValue, "tether.dev/job": job, E2ELabel: "true"}
}

func gcOwnerRef(pod *corev1.Pod) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}
}

func (c *Cluster) gcCreateConfigMap(ctx context.Context, t *testing.T, ns, name string, labels map[string]string, owners []metav1.OwnerReference) *corev1.ConfigMap {
	t.Helper()
	cm, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, OwnerReferences: owners},
		Data:       map[string]string{"script": "echo hi\n"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create ConfigMap %s/%s: %v", ns, name, err)
	}
	return cm
}

func (c *Cluster) gcCreateSecret(ctx context.Context, t *testing.T, ns, name string, labels map[string]string, owners []metav1.OwnerReference) {
	t.Helper()
	_, err := c.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, OwnerReferences: owners},
		StringData: map[string]string{"TOKEN": "s3cret"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Secret %s/%s: %v", ns, name, err)
	}
}

// gcBinary builds the tether CLI from the working tree once per test run.
var gcBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "tether-e2e-gc-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "tether")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/tether")
	cmd.Dir = gcRepoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/tether: %v\n%s", err, out)
	}
	return bin, nil
})

// gcLine is one line of `tether gc --log-format json`.
type gcLine struct {
	Action    string `json:"action"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	Error     string `json:"error"`
	Reason    string `json:"reason"`
	Pods      struct {
		Scanned, Matched, Deleted, Skipped int
	} `json:"pods"`
	Failed int `json:"failed"`
}

// gcRun runs the real tether binary's gc command and returns its exit
// code and parsed report lines (the last one is the summary).
func gcRun(t *testing.T, kubeconfig string, args ...string) (int, []gcLine, string) {
	t.Helper()
	bin, err := gcBinary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"gc", "--kubeconfig", kubeconfig, "--log-format", "json"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG=/nonexistent") // --kubeconfig must win
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("run tether gc: %v", err)
	}
	report := stdout.String()
	var lines []gcLine
	sc := bufio.NewScanner(strings.NewReader(report))
	for sc.Scan() {
		var l gcLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("report line %q is not JSON: %v\nstderr: %s", sc.Text(), err, stderr.String())
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 || lines[len(lines)-1].Action != "summary" {
		t.Fatalf("tether gc %v: no summary line (exit %d)\nstdout: %s\nstderr: %s", args, code, report, stderr.String())
	}
	return code, lines, report + stderr.String()
}

// gcNames returns sorted "kind ns/name" of the lines with action.
func gcNames(lines []gcLine, action string) []string {
	var out []string
	for _, l := range lines {
		if l.Action == action {
			out = append(out, l.Kind+" "+l.Namespace+"/"+l.Name)
		}
	}
	sort.Strings(out)
	return out
}

// gcWaitPast sleeps until every creation timestamp in ts is more than d
// in the past (timestamps have one-second resolution).
func gcWaitPast(ts []metav1.Time, d time.Duration) {
	var latest time.Time
	for _, t := range ts {
		if t.After(latest) {
			latest = t.Time
		}
	}
	// +1 s: the apiserver truncates the creation time to whole seconds,
	// but this clock and the apiserver's are the same, so a margin for the
	// truncation and scheduling suffices.
	time.Sleep(time.Until(latest.Add(d + 1200*time.Millisecond)))
}

// The cleaner against the real apiserver: hundreds of pods through
// pagination, exactly the expired pods and unowned labelled objects of the
// given namespace deleted, dry runs touching nothing, a second run finding
// nothing.
func TestGCDeletesExactlyExpiredAndUnowned(t *testing.T) {
	c := NewCluster(t)
	ctx := context.Background()
	ns := c.NewNamespace(t, "gc")
	other := c.NewNamespace(t, "gc-other")

	var want []string // "kind ns/name" that must be deleted
	var created []metav1.Time
	add := func(p *corev1.Pod) *corev1.Pod {
		got := c.CreatePod(ctx, t, p)
		created = append(created, got.CreationTimestamp)
		return got
	}
	// Bulk: 120 expired and 120 unexpired pods, listed 25 per page.
	for i := range 120 {
		add(gcPod(ns, fmt.Sprintf("bulk-expired-%03d", i), gcStr("1")))
		add(gcPod(ns, fmt.Sprintf("bulk-young-%03d", i), gcStr("3600")))
		want = append(want, fmt.Sprintf("pod %s/bulk-expired-%03d", ns, i))
	}
	// Any phase: Pending (unscheduled), Running, Succeeded.
	add(gcPod(ns, "expired-pending", gcStr("1")))
	add(gcPod(ns, "expired-running", gcStr("2"), "sleep", "3600"))
	add(gcPod(ns, "expired-succeeded", gcStr("2"), "true"))
	want = append(want, "pod "+ns+"/expired-pending", "pod "+ns+"/expired-running", "pod "+ns+"/expired-succeeded")
	young := add(gcPod(ns, "young", gcStr("3600")))
	add(gcPod(ns, "no-annotation", nil))
	malformed := map[string]string{"malformed-abc": "abc", "malformed-negative": "-5", "malformed-exponent": "1e3",
		"malformed-empty": "", "malformed-huge": "99999999999999999999999"}
	var wantSkipped []string
	for name, v := range malformed {
		add(gcPod(ns, name, gcStr(v)))
		wantSkipped = append(wantSkipped, "pod "+ns+"/"+name)
	}
	add(gcPod(other, "expired-in-other-namespace", gcStr("1")))

	// Owned objects: unowned + labelled go, everything else stays.
	c.gcCreateConfigMap(ctx, t, ns, "cm-unowned", gcLabels("j1"), nil)
	c.gcCreateSecret(ctx, t, ns, "secret-unowned", gcLabels("j1"), nil)
	c.gcCreateConfigMap(ctx, t, ns, "cm-owned-by-live-pod", gcLabels("j2"), gcOwnerRef(young))
	c.gcCreateSecret(ctx, t, ns, "secret-owned-by-live-pod", gcLabels("j2"), gcOwnerRef(young))
	c.gcCreateConfigMap(ctx, t, ns, "cm-user-unlabelled", map[string]string{E2ELabel: "true"}, nil)
	c.gcCreateSecret(ctx, t, ns, "secret-user-unlabelled", nil, nil)
	c.gcCreateConfigMap(ctx, t, other, "cm-unowned-in-other-namespace", gcLabels("j3"), nil)
	want = append(want, "configmap "+ns+"/cm-unowned", "secret "+ns+"/secret-unowned")
	sort.Strings(want)
	sort.Strings(wantSkipped)

	c.WaitPodRunning(ctx, t, ns, "expired-running")
	c.WaitPodPhase(ctx, t, ns, "expired-succeeded", corev1.PodSucceeded, 2*time.Minute)
	gcWaitPast(created, 2*time.Second)

	count := func() (pods, cms, secrets int) {
		p, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm, err := c.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.Client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(p.Items), len(cm.Items), len(s.Items)
	}
	p0, cm0, s0 := count()

	for _, mode := range []string{"--dry-run", "--dry-run=server"} {
		code, lines, out := gcRun(t, c.Kubeconfig, "-n", ns, "--grace", "1s", "--chunk-size", "25", mode)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", mode, code, out)
		}
		if got := gcNames(lines, "would-delete"); !slices.Equal(got, want) {
			t.Errorf("%s would delete:\n%v\nwant:\n%v", mode, got, want)
		}
		if got := gcNames(lines, "deleted"); len(got) != 0 {
			t.Errorf("%s deleted %v", mode, got)
		}
		if p, cm, s := count(); p != p0 || cm != cm0 || s != s0 {
			t.Fatalf("%s changed the namespace: pods %d→%d configmaps %d→%d secrets %d→%d", mode, p0, p, cm0, cm, s0, s)
		}
	}

	code, lines, out := gcRun(t, c.Kubeconfig, "-n", ns, "--grace", "1s", "--chunk-size", "25")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if got := gcNames(lines, "deleted"); !slices.Equal(got, want) {
		t.Errorf("deleted:\n%v\nwant:\n%v", got, want)
	}
	if got := gcNames(lines, "skipped"); !slices.Equal(got, wantSkipped) {
		t.Errorf("skipped (malformed TTL):\n%v\nwant:\n%v", got, wantSkipped)
	}
	sum := lines[len(lines)-1]
	if sum.Pods.Scanned != p0 || sum.Pods.Deleted != 123 || sum.Failed != 0 {
		t.Errorf("summary %+v (pods in namespace %d)", sum, p0)
	}
	// Deleted pods are gone (the Running one after its grace period); the
	// rest is still there.
	c.WaitFor(ctx, t, "expired pods gone", func(ctx context.Context) (bool, error) {
		for _, w := range want {
			kind, name, _ := strings.Cut(w, " ")
			_, name, _ = strings.Cut(name, "/")
			var err error
			switch kind {
			case "pod":
				_, err = c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			case "configmap":
				_, err = c.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
			default:
				_, err = c.Client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
			}
			if err == nil {
				return false, nil
			}
			if !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		return true, nil
	})
	p, cm, s := count()
	if p != p0-123 || cm != cm0-1 || s != s0-1 {
		t.Errorf("left pods %d (want %d) configmaps %d (want %d) secrets %d (want %d)", p, p0-123, cm, cm0-1, s, s0-1)
	}
	for _, keep := range []string{"young", "no-annotation", "malformed-abc", "bulk-young-000", "bulk-young-119"} {
		if _, err := c.Client.CoreV1().Pods(ns).Get(ctx, keep, metav1.GetOptions{}); err != nil {
			t.Errorf("pod %s: %v", keep, err)
		}
	}
	if _, err := c.Client.CoreV1().Pods(other).Get(ctx, "expired-in-other-namespace", metav1.GetOptions{}); err != nil {
		t.Errorf("pod in a namespace not given: %v", err)
	}
	if _, err := c.Client.CoreV1().ConfigMaps(other).Get(ctx, "cm-unowned-in-other-namespace", metav1.GetOptions{}); err != nil {
		t.Errorf("ConfigMap in a namespace not given: %v", err)
	}

	// A second run finds nothing more to delete.
	code, lines, out = gcRun(t, c.Kubeconfig, "-n", ns, "--grace", "1s")
	if got := gcNames(lines, "deleted"); code != 0 || len(got) != 0 {
		t.Errorf("second run: exit %d deleted %v\n%s", code, got, out)
	}
}

// The UID precondition holds on the real apiserver: deleting by a stale
// UID fails with Conflict (which the cleaner reports and skips) and the
// recreated object survives.
func TestGCPreconditionProtectsRecreatedObject(t *testing.T) {
	c := NewCluster(t)
	ctx := context.Background()
	ns := c.NewNamespace(t, "gc-uid")
	old := c.gcCreateConfigMap(ctx, t, ns, "scripts", gcLabels("j"), nil)
	if err := c.Client.CoreV1().ConfigMaps(ns).Delete(ctx, "scripts", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	recreated := c.gcCreateConfigMap(ctx, t, ns, "scripts", gcLabels("j"), nil)
	if recreated.UID == old.UID {
		t.Fatal("recreated ConfigMap kept its UID")
	}
	mc, err := metadata.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	store := gc.NewStore(mc)
	uid := old.UID
	err = store.Delete(ctx, gc.KindConfigMap, ns, "scripts", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if !apierrors.IsConflict(err) {
		t.Fatalf("delete with a stale UID: %v, want a Conflict", err)
	}
	if got, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "scripts", metav1.GetOptions{}); err != nil || got.UID != recreated.UID {
		t.Fatalf("recreated ConfigMap: %v %v", got, err)
	}
	// And through the metadata Store the cleaner lists with: paginated.
	page, err := store.List(ctx, gc.KindConfigMap, ns, metav1.ListOptions{Limit: 1})
	if err != nil || len(page.Items) != 1 || page.Continue == "" {
		t.Fatalf("first page of 2 ConfigMaps with limit 1: %d items, continue %q, err %v", len(page.Items), page.Continue, err)
	}
}

// A delete the credentials do not allow makes tether gc exit non-zero,
// reports the failure, and deletes nothing.
func TestGCExitsNonZeroWhenADeleteFails(t *testing.T) {
	c := NewCluster(t)
	ctx := context.Background()
	ns := c.NewNamespace(t, "gc-fail")
	sa := c.gcServiceAccountWithRole(ctx, t, ns, "gc-list-only", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "configmaps", "secrets"}, Verbs: []string{"get", "list"}},
	})
	pod := c.CreatePod(ctx, t, gcPod(ns, "expired", gcStr("1")))
	gcWaitPast([]metav1.Time{pod.CreationTimestamp}, time.Second)
	kubeconfig := c.gcTokenKubeconfig(ctx, t, ns, sa)
	code, lines, out := gcRun(t, kubeconfig, "-n", ns)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	failed := gcNames(lines, "failed")
	if !slices.Equal(failed, []string{"pod " + ns + "/expired"}) || !strings.Contains(out, "forbidden") {
		t.Errorf("failed lines %v\n%s", failed, out)
	}
	if _, err := c.Client.CoreV1().Pods(ns).Get(ctx, "expired", metav1.GetOptions{}); err != nil {
		t.Errorf("pod: %v", err)
	}
}

// gcServiceAccountWithRole creates a ServiceAccount bound to a Role with
// rules in ns and returns its name.
func (c *Cluster) gcServiceAccountWithRole(ctx context.Context, t *testing.T, ns, name string, rules []rbacv1.PolicyRule) string {
	t.Helper()
	cs := c.Client
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// gcToken mints a short-lived token for ServiceAccount ns/sa (TokenRequest).
func (c *Cluster) gcToken(ctx context.Context, t *testing.T, ns, sa string) string {
	t.Helper()
	exp := int64(600)
	tr, err := c.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s/%s: %v", ns, sa, err)
	}
	return tr.Status.Token
}

// gcTokenConfig is a REST config that authenticates as ServiceAccount ns/sa.
func (c *Cluster) gcTokenConfig(ctx context.Context, t *testing.T, ns, sa string) *rest.Config {
	cfg := rest.AnonymousClientConfig(c.Config)
	cfg.BearerToken = c.gcToken(ctx, t, ns, sa)
	return cfg
}

// gcTokenKubeconfig writes a kubeconfig authenticating as ns/sa.
func (c *Cluster) gcTokenKubeconfig(ctx context.Context, t *testing.T, ns, sa string) string {
	t.Helper()
	ca := c.Config.CAData
	if len(ca) == 0 {
		var err error
		if ca, err = os.ReadFile(c.Config.CAFile); err != nil {
			t.Fatalf("read the cluster CA: %v", err)
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: c.Config.Host, CertificateAuthorityData: ca}
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: c.gcToken(ctx, t, ns, sa)}
	cfg.Contexts["sa"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "sa", Namespace: ns}
	cfg.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// gcHelm runs the helm that scripts/tools.sh installs against the node.
func gcHelm(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	tools := exec.Command(filepath.Join(gcRepoRoot, "scripts", "tools.sh"), "helm")
	tools.Stderr = os.Stderr
	path, err := tools.Output()
	if err != nil {
		t.Fatalf("scripts/tools.sh helm: %v", err)
	}
	home := t.TempDir()
	cmd := exec.Command(strings.TrimSpace(string(path)), append(args, "--kubeconfig", kubeconfig)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// gcInstallChart installs deploy/helm/tether-gc as release rel in ns with
// the test node's settings (hostNetwork + the apiserver on loopback, the
// local image, suspended schedule) plus set, and uninstalls it afterwards.
// It returns the CronJob.
func (c *Cluster) gcInstallChart(ctx context.Context, t *testing.T, ns, rel string, set ...string) *batchv1.CronJob {
	t.Helper()
	u, err := url.Parse(c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		t.Fatalf("apiserver address %q: %v", c.Config.Host, err)
	}
	// The node has no kube-proxy: the pod reaches the apiserver on the
	// host's loopback (k8s-node-notes.md, pitfall 3). Test values only.
	// The chart's image repository is the project's CLI image; only the
	// tag is the suite's (the chart defaults it to its appVersion).
	values := fmt.Sprintf(`image:
  tag: %q
  pullPolicy: Never
suspend: true
grace: 1s
pod:
  hostNetwork: true
  dnsPolicy: Default
  env:
    - {name: KUBERNETES_SERVICE_HOST, value: %q}
    - {name: KUBERNETES_SERVICE_PORT, value: %q}
  labels:
    %s: "true"
`, imageTag(), host, port, E2ELabel)
	vf := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(vf, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"install", rel, filepath.Join(gcRepoRoot, "deploy", "helm", "tether-gc"), "--namespace", ns, "--values", vf}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	gcHelm(t, c.Kubeconfig, args...)
	t.Cleanup(func() { gcHelm(t, c.Kubeconfig, "uninstall", rel, "--namespace", ns) })
	cjs, err := c.Client.BatchV1().CronJobs(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + rel})
	if err != nil || len(cjs.Items) != 1 {
		t.Fatalf("CronJob of release %s: %v (%d found)", rel, err, len(cjs.Items))
	}
	if img := cjs.Items[0].Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image; img != CLIImage {
		t.Fatalf("the chart's CronJob runs image %q, want the suite's CLI image %q", img, CLIImage)
	}
	return &cjs.Items[0]
}

// gcRunCronJobNow creates a Job from the CronJob's template, as
// `kubectl create job --from=cronjob/NAME` does, waits for it to finish and
// returns its pod's log.
func (c *Cluster) gcRunCronJobNow(ctx context.Context, t *testing.T, cj *batchv1.CronJob) (succeeded bool, log string) {
	t.Helper()
	tmpl := cj.Spec.JobTemplate
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: cj.Name + "-now", Namespace: cj.Namespace, Labels: tmpl.Labels,
			Annotations:     map[string]string{"cronjob.kubernetes.io/instantiate": "manual"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))},
		},
		Spec: tmpl.Spec,
	}
	job, err := c.Client.BatchV1().Jobs(cj.Namespace).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Job from CronJob %s: %v", cj.Name, err)
	}
	var podName string
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	c.WaitFor(wctx, t, "Job "+job.Name+" finished", func(ctx context.Context) (bool, error) {
		if podName == "" {
			pods, err := c.Client.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job.Name})
			if err != nil {
				return false, err
			}
			if len(pods.Items) > 0 {
				podName = pods.Items[0].Name
				c.DumpPodOnFailure(t, job.Namespace, podName)
			}
		}
		j, err := c.Client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range j.Status.Conditions {
			if cond.Status == corev1.ConditionTrue && (cond.Type == batchv1.JobComplete || cond.Type == batchv1.JobFailed) {
				succeeded = cond.Type == batchv1.JobComplete
				return true, nil
			}
		}
		return false, nil
	})
	if podName == "" {
		t.Fatalf("Job %s finished without a pod", job.Name)
	}
	raw, err := c.Client.CoreV1().Pods(job.Namespace).GetLogs(podName, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("logs of %s: %v", podName, err)
	}
	return succeeded, string(raw)
}

// The chart installed with helm: its CronJob's pod runs /tether gc from the
// CLI image in-cluster (service-account token, namespace from the pod)
// and deletes the expired pod and the unowned ConfigMap, nothing else. Its
// ServiceAccount can do what the cleaner needs and nothing more.
func TestGCHelmChartOnNode(t *testing.T) {
	c := NewCluster(t)
	ctx := context.Background()
	ns := c.NewNamespace(t, "gc-helm")
	other := c.NewNamespace(t, "gc-helm-other")
	cj := c.gcInstallChart(ctx, t, ns, "gc")
	if cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
		t.Errorf("installed CronJob has concurrencyPolicy %q", cj.Spec.ConcurrencyPolicy)
	}

	expired := c.CreatePod(ctx, t, gcPod(ns, "job-expired", gcStr("1")))
	young := c.CreatePod(ctx, t, gcPod(ns, "job-young", gcStr("3600")))
	c.CreatePod(ctx, t, gcPod(ns, "not-tether", nil))
	c.CreatePod(ctx, t, gcPod(other, "expired-elsewhere", gcStr("1")))
	unowned := c.gcCreateConfigMap(ctx, t, ns, "leaked-scripts", gcLabels("j"), nil)
	c.gcCreateConfigMap(ctx, t, ns, "young-scripts", gcLabels("j2"), gcOwnerRef(young))
	gcWaitPast([]metav1.Time{expired.CreationTimestamp, unowned.CreationTimestamp}, time.Second)

	ok, log := c.gcRunCronJobNow(ctx, t, cj)
	if !ok {
		t.Fatalf("the gc Job failed; log:\n%s", log)
	}
	deleted := gcDeletedInLog(t, log)
	if want := []string{"configmap " + ns + "/leaked-scripts", "pod " + ns + "/job-expired"}; !slices.Equal(deleted, want) {
		t.Errorf("the CronJob's run deleted %v, want %v; log:\n%s", deleted, want, log)
	}
	for _, p := range []struct{ ns, name string }{{ns, "job-young"}, {ns, "not-tether"}, {other, "expired-elsewhere"}} {
		if _, err := c.Client.CoreV1().Pods(p.ns).Get(ctx, p.name, metav1.GetOptions{}); err != nil {
			t.Errorf("pod %s/%s: %v", p.ns, p.name, err)
		}
	}
	if _, err := c.Client.CoreV1().Pods(ns).Get(ctx, "job-expired", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("expired pod still there: %v", err)
	}
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "young-scripts", metav1.GetOptions{}); err != nil {
		t.Errorf("owned ConfigMap: %v", err)
	}

	// RBAC with the real token of the chart's ServiceAccount.
	sa := cj.Spec.JobTemplate.Spec.Template.Spec.ServiceAccountName
	as, err := kubernetes.NewForConfig(c.gcTokenConfig(ctx, t, ns, sa))
	if err != nil {
		t.Fatal(err)
	}
	deploy := c.gcDeployment(ctx, t, ns)
	gcCheckAccess(ctx, t, as, ns, other, deploy, young.Name, false)
}

// The cluster-wide variant (allNamespaces: ClusterRole + binding), checked
// with a real token; its schedule stays suspended so it never cleans the
// other tests' namespaces.
func TestGCHelmChartClusterRBAC(t *testing.T) {
	c := NewCluster(t)
	ctx := context.Background()
	ns := c.NewNamespace(t, "gc-helm-cluster")
	other := c.NewNamespace(t, "gc-helm-cluster-other")
	cj := c.gcInstallChart(ctx, t, ns, "gcall", "allNamespaces=true")
	if args := cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--all-namespaces") {
		t.Errorf("args %q", args)
	}
	pod := c.CreatePod(ctx, t, gcPod(ns, "some-pod", nil))
	as, err := kubernetes.NewForConfig(c.gcTokenConfig(ctx, t, ns, cj.Spec.JobTemplate.Spec.Template.Spec.ServiceAccountName))
	if err != nil {
		t.Fatal(err)
	}
	gcCheckAccess(ctx, t, as, ns, other, c.gcDeployment(ctx, t, ns), pod.Name, true)
}

// gcDeployment creates a Deployment with no replicas for the RBAC checks.
func (c *Cluster) gcDeployment(ctx context.Context, t *testing.T, ns string) string {
	t.Helper()
	zero := int32(0)
	labels := map[string]string{"app": "rbac-probe"}
	spec := gcPod(ns, "x", nil).Spec
	spec.RestartPolicy = corev1.RestartPolicyAlways
	d, err := c.Client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "rbac-probe", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &zero,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       spec,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d.Name
}

// gcCheckAccess makes real API calls as the gc ServiceAccount: what the
// cleaner needs succeeds, everything else is Forbidden. cluster: the
// ClusterRole variant (other namespaces readable too).
func gcCheckAccess(ctx context.Context, t *testing.T, as kubernetes.Interface, ns, other, deployment, pod string, cluster bool) {
	t.Helper()
	core := as.CoreV1()
	allowed := map[string]func() error{
		"list pods":       func() error { _, err := core.Pods(ns).List(ctx, metav1.ListOptions{}); return err },
		"get pod":         func() error { _, err := core.Pods(ns).Get(ctx, pod, metav1.GetOptions{}); return err },
		"list configmaps": func() error { _, err := core.ConfigMaps(ns).List(ctx, metav1.ListOptions{}); return err },
		"list secrets":    func() error { _, err := core.Secrets(ns).List(ctx, metav1.ListOptions{}); return err },
		"dry-run delete pod": func() error {
			return core.Pods(ns).Delete(ctx, pod, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		},
	}
	forbidden := map[string]func() error{
		"delete deployment": func() error {
			return as.AppsV1().Deployments(ns).Delete(ctx, deployment, metav1.DeleteOptions{})
		},
		"create pod": func() error {
			_, err := core.Pods(ns).Create(ctx, gcPod(ns, "intruder", nil), metav1.CreateOptions{})
			return err
		},
		"get secret": func() error { _, err := core.Secrets(ns).Get(ctx, "any", metav1.GetOptions{}); return err },
		"watch pods": func() error {
			w, err := core.Pods(ns).Watch(ctx, metav1.ListOptions{})
			if err == nil {
				w.Stop()
			}
			return err
		},
		"patch pod": func() error {
			_, err := core.Pods(ns).Patch(ctx, pod, types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
			return err
		},
		"list services":   func() error { _, err := core.Services(ns).List(ctx, metav1.ListOptions{}); return err },
		"list namespaces": func() error { _, err := core.Namespaces().List(ctx, metav1.ListOptions{}); return err },
		"create configmap": func() error {
			_, err := core.ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "intruder"}}, metav1.CreateOptions{})
			return err
		},
	}
	inOther := map[string]func() error{
		"list secrets in another namespace": func() error { _, err := core.Secrets(other).List(ctx, metav1.ListOptions{}); return err },
		"list pods in another namespace":    func() error { _, err := core.Pods(other).List(ctx, metav1.ListOptions{}); return err },
		"list pods in all namespaces":       func() error { _, err := core.Pods("").List(ctx, metav1.ListOptions{}); return err },
	}
	for what, call := range inOther {
		if cluster {
			allowed[what] = call
		} else {
			forbidden[what] = call
		}
	}
	for what, call := range allowed {
		if err := call(); err != nil {
			t.Errorf("gc ServiceAccount cannot %s: %v", what, err)
		}
	}
	for what, call := range forbidden {
		if err := call(); !apierrors.IsForbidden(err) {
			t.Errorf("gc ServiceAccount may %s (err %v), want Forbidden", what, err)
		}
	}
}

// gcDeletedInLog returns what a `tether gc --log-format json` log says it
// deleted ("KIND NAMESPACE/NAME", sorted); a line that is not JSON fails
// the test.
func gcDeletedInLog(t *testing.T, log string) []string {
	t.Helper()
	var deleted []string
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		var l gcLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		if l.Action == "deleted" {
			deleted = append(deleted, l.Kind+" "+l.Namespace+"/"+l.Name)
		}
	}
	sort.Strings(deleted)
	return deleted
}
