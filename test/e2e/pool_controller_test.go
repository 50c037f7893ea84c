//go:build e2e

package e2e

// tether pool serve on the real node: the built tether binary runs as the
// pools' controller, with a token bound to exactly the Role deploy/ grants
// (poolctl.Access), against a namespace of its own.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/tether-ci/tether/internal/contract"
	"github.com/tether-ci/tether/internal/poolctl"
)

// poolController is one `tether pool serve` process.
type poolController struct {
	t       *testing.T
	cmd     *exec.Cmd
	log     *safeBuffer
	metrics string // host:port
	done    chan struct{}
}

// poolWriteFile writes a pools file of pools (name → YAML body lines).
func poolWriteFile(t *testing.T, path string, pools ...string) {
	t.Helper()
	body := "pools:\n"
	for _, p := range pools {
		body += p
	}
	if err := os.WriteFile(path+".tmp", []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil { // whole, as a ConfigMap volume updates
		t.Fatal(err)
	}
}

// poolEntry is one pool of the suite's images.
func poolEntry(name string, size int, maxIdle string, extra ...string) string {
	s := fmt.Sprintf("- name: %s\n  image: %s\n  helper-image: %s\n  size: %d\n  max-idle: %s\n", name, BusyboxImage, HelperImage, size, maxIdle)
	for _, e := range extra {
		s += "  " + e + "\n"
	}
	return s
}

// poolFreeAddr returns a loopback address nobody listens on.
func poolFreeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// poolKubeconfig makes a ServiceAccount bound to a Role of exactly
// poolctl.Access in ns and returns a kubeconfig of its token.
func (c *Cluster) poolKubeconfig(ctx context.Context, t *testing.T, ns string) string {
	sa := c.gcServiceAccountWithRole(ctx, t, ns, "tether-pool", poolctl.PolicyRules(poolctl.Access))
	return c.gcTokenKubeconfig(ctx, t, ns, sa)
}

// startPoolController runs `tether pool serve` with short leader election
// times; it is SIGKILLed when the test ends if still running.
func startPoolController(t *testing.T, kubeconfig, config, identity string) *poolController {
	t.Helper()
	bin := buildTether(t)
	pc := &poolController{t: t, log: &safeBuffer{}, metrics: poolFreeAddr(t), done: make(chan struct{})}
	pc.cmd = exec.Command(bin, "pool", "serve", "--kubeconfig", kubeconfig, "--config", config,
		"--identity", identity, "--metrics-address", pc.metrics, "--reload-interval", "500ms",
		"--lease-duration", "4s", "--renew-deadline", "3s", "--retry-period", "500ms", "--backoff-max", "8s")
	pc.cmd.Stdout = pc.log
	pc.cmd.Stderr = pc.log
	if err := pc.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = pc.cmd.Wait(); close(pc.done) }()
	t.Cleanup(func() {
		pc.kill()
		if t.Failed() {
			t.Logf("controller %s log:\n%s", identity, pc.log.Bytes())
		}
	})
	return pc
}

// kill SIGKILLs the controller and waits for it.
func (pc *poolController) kill() {
	_ = pc.cmd.Process.Signal(syscall.SIGKILL)
	<-pc.done
}

// created counts the pods this controller says it created.
func (pc *poolController) created() int {
	return strings.Count(string(pc.log.Bytes()), "created a warm pod")
}

// metric returns the sum of the samples of a metric whose line starts
// with prefix (name and labels), from the controller's /metrics.
func (pc *poolController) metric(prefix string) float64 {
	resp, err := http.Get("http://" + pc.metrics + "/metrics")
	if err != nil {
		pc.t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, prefix) {
			var v float64
			fields := strings.Fields(l)
			fmt.Sscan(fields[len(fields)-1], &v)
			sum += v
		}
	}
	return sum
}

// poolWatch watches the namespace's warm pods for the whole test and
// records the largest number of unclaimed (starting or idle, not
// terminating) pods each pool ever had.
type poolWatch struct {
	mu    sync.Mutex
	pods  map[string]*corev1.Pod
	most  map[string]int
	seen  map[string]bool
	cause string
}

func (c *Cluster) watchPools(ctx context.Context, t *testing.T, ns string) *poolWatch {
	w, err := c.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: contract.LabelPool})
	if err != nil {
		t.Fatal(err)
	}
	pw := &poolWatch{pods: map[string]*corev1.Pod{}, most: map[string]int{}, seen: map[string]bool{}}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			pw.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(pw.pods, p.Name)
			} else {
				pw.pods[p.Name] = p
				pw.seen[p.Name] = true
			}
			counts := map[string]int{}
			for _, q := range pw.pods {
				if q.DeletionTimestamp == nil && q.Labels[contract.LabelWarm] != contract.WarmClaimed {
					counts[q.Labels[contract.LabelPool]]++
				}
			}
			for k, n := range counts {
				if n > pw.most[k] {
					pw.most[k] = n
					pw.cause = fmt.Sprintf("%s %s", ev.Type, p.Name)
				}
			}
			pw.mu.Unlock()
		}
	}()
	t.Cleanup(w.Stop)
	return pw
}

// maxUnclaimed is the most unclaimed pods pool ever had.
func (pw *poolWatch) maxUnclaimed(pool string) int {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.most[pool]
}

// poolPods lists the pool's pods now, by state; terminating ones apart.
func (c *Cluster) poolPods(ctx context.Context, t *testing.T, ns, pool string) (byState map[string][]corev1.Pod, terminating int) {
	t.Helper()
	list, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelPool + "=" + pool})
	if err != nil {
		t.Fatal(err)
	}
	byState = map[string][]corev1.Pod{}
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil {
			terminating++
			continue
		}
		byState[p.Labels[contract.LabelWarm]] = append(byState[p.Labels[contract.LabelWarm]], p)
	}
	return byState, terminating
}

// waitIdle waits until pool has exactly n idle pods and no starting one.
func (c *Cluster) waitIdle(ctx context.Context, t *testing.T, ns, pool string, n int, timeout time.Duration) []corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		pods, _ := c.poolPods(ctx, t, ns, pool)
		if len(pods[contract.WarmIdle]) == n && len(pods[contract.WarmStarting]) == 0 {
			return pods[contract.WarmIdle]
		}
		if time.Now().After(deadline) {
			t.Fatalf("pool %s: %d idle, %d starting after %s; want %d idle", pool, len(pods[contract.WarmIdle]), len(pods[contract.WarmStarting]), timeout, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// poolClaim claims pod as a job does: the warm label set to claimed with
// an update that carries the pod's resourceVersion.
func (c *Cluster) poolClaim(ctx context.Context, t *testing.T, pod corev1.Pod) {
	t.Helper()
	up := pod.DeepCopy()
	up.Labels[contract.LabelWarm] = contract.WarmClaimed
	up.Labels[contract.LabelJob] = "e2e-claim"
	if up.Annotations == nil {
		up.Annotations = map[string]string{}
	}
	up.Annotations[contract.AnnotationClaimedAt] = time.Now().UTC().Format(time.RFC3339Nano)
	if _, err := c.Client.CoreV1().Pods(pod.Namespace).Update(ctx, up, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("claim %s: %v", pod.Name, err)
	}
}

// The controller against the node: it fills the pool to its size and
// never beyond; a claim is refilled at once; only the leader creates; the
// leader SIGKILLed in the middle of a refill leaves no surplus and no
// leak; changed settings replace the idle pods but not the claimed one;
// a pool removed from the file loses its idle pods; `tether pool status`
// shows it all.
func TestPoolControllerKeepsThePool(t *testing.T) {
	c := NewCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	ns := c.NewNamespace(t, "poolctl")
	kc := c.poolKubeconfig(ctx, t, ns)
	pw := c.watchPools(ctx, t, ns)
	const size = 3
	config := filepath.Join(t.TempDir(), "pools.yaml")
	poolWriteFile(t, config, poolEntry("a", size, "10m"))

	a := startPoolController(t, kc, config, "ctl-a")
	c.waitIdle(ctx, t, ns, "a", size, 2*time.Minute)
	b := startPoolController(t, kc, config, "ctl-b") // a second replica while a leads
	if n := a.created(); n != size {
		t.Errorf("controller a created %d pods, want %d", n, size)
	}

	// A claim is replaced at once (informer, not polling).
	idle := c.waitIdle(ctx, t, ns, "a", size, time.Minute)
	claimedAt := time.Now()
	c.poolClaim(ctx, t, idle[0])
	claimed := []string{idle[0].Name}
	for {
		pods, _ := c.poolPods(ctx, t, ns, "a")
		if len(pods[contract.WarmIdle])+len(pods[contract.WarmStarting]) == size {
			t.Logf("claim replaced after %s", time.Since(claimedAt).Round(time.Millisecond))
			break
		}
		if time.Since(claimedAt) > 3*time.Second {
			t.Fatalf("a claimed pod was not replaced within 3s: %d idle, %d starting", len(pods[contract.WarmIdle]), len(pods[contract.WarmStarting]))
		}
		time.Sleep(50 * time.Millisecond)
	}
	idle = c.waitIdle(ctx, t, ns, "a", size, time.Minute)
	if n := b.created(); n != 0 {
		t.Errorf("controller b created %d pods while a led", n)
	}

	// The leader SIGKILLed in the middle of a refill of two claims; b takes
	// over once the Lease runs out, a restarts as a candidate.
	// A claim the old leader may still refill, one made after its end
	// that only the new leader can.
	c.poolClaim(ctx, t, idle[0])
	time.Sleep(30 * time.Millisecond)
	a.kill()
	c.poolClaim(ctx, t, idle[1])
	claimed = append(claimed, idle[0].Name, idle[1].Name)
	a = startPoolController(t, kc, config, "ctl-a2")
	idle = c.waitIdle(ctx, t, ns, "a", size, 2*time.Minute)
	time.Sleep(2 * time.Second) // anything still coming would come now
	pods, _ := c.poolPods(ctx, t, ns, "a")
	if n := len(pods[contract.WarmIdle]) + len(pods[contract.WarmStarting]); n != size {
		t.Errorf("after the leader's SIGKILL: %d unclaimed pods, want %d", n, size)
	}
	if n := len(pods[contract.WarmClaimed]); n != len(claimed) {
		t.Errorf("%d claimed pods, want the %d claimed (never touched)", n, len(claimed))
	}
	if n := b.created() + a.created(); n < 1 {
		t.Errorf("the new leader created no pod (b %d, a2 %d)", b.created(), a.created())
	}

	// Settings changed: the idle pods are replaced by pods of the new hash,
	// the claimed ones are untouched.
	oldIdle := map[string]bool{}
	for _, p := range idle {
		oldIdle[p.Name] = true
	}
	oldHash := idle[0].Labels[contract.LabelPoolHash]
	poolWriteFile(t, config, poolEntry("a", size, "10m", "memory: 96Mi"))
	deadline := time.Now().Add(2 * time.Minute)
	for {
		pods, _ := c.poolPods(ctx, t, ns, "a")
		fresh := 0
		for _, p := range pods[contract.WarmIdle] {
			if !oldIdle[p.Name] && p.Labels[contract.LabelPoolHash] != oldHash {
				fresh++
			}
		}
		if fresh == size && len(pods[contract.WarmIdle]) == size {
			if q := pods[contract.WarmIdle][0].Spec.Containers[0].Resources.Requests[corev1.ResourceMemory]; q.Cmp(resource.MustParse("96Mi")) != 0 {
				t.Errorf("new warm pod's memory request %s, want 96Mi", q.String())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("settings changed: %d of %d idle pods have the new settings after 2m", fresh, len(pods[contract.WarmIdle]))
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, name := range claimed {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil || p.Labels[contract.LabelWarm] != contract.WarmClaimed {
			t.Errorf("claimed pod %s was touched: %v", name, err)
		}
	}

	// The pool removed from the file (another one in its place): its idle
	// pods go, its claimed ones stay.
	poolWriteFile(t, config, poolEntry("b", 1, "10m"))
	c.waitIdle(ctx, t, ns, "b", 1, 2*time.Minute)
	deadline = time.Now().Add(time.Minute)
	for {
		pods, _ := c.poolPods(ctx, t, ns, "a")
		if len(pods[contract.WarmIdle])+len(pods[contract.WarmStarting]) == 0 {
			if len(pods[contract.WarmClaimed]) != len(claimed) {
				t.Errorf("pool removed: %d claimed pods left, want %d", len(pods[contract.WarmClaimed]), len(claimed))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pool a removed from the file, but it still has %d idle and %d starting pods", len(pods[contract.WarmIdle]), len(pods[contract.WarmStarting]))
		}
		time.Sleep(200 * time.Millisecond)
	}

	if m := pw.maxUnclaimed("a"); m > size {
		t.Errorf("pool a had %d unclaimed pods at once (at %s), more than its size %d", m, pw.cause, size)
	}
	if m := pw.maxUnclaimed("b"); m > 1 {
		t.Errorf("pool b had %d unclaimed pods at once, more than its size 1", m)
	}

	// tether pool status: b ready, a's claims counted.
	// (Status reads Events: not the controller's Role, the admin's.)
	res := runCLI(ctx, t, c, buildTether(t), "pool", "status", "--kubeconfig", c.Kubeconfig, "-n", ns, "--config", config)
	t.Logf("tether pool status:\n%s%s", res.stdout, res.stderr)
	if res.code != 0 {
		t.Fatalf("tether pool status: exit %d", res.code)
	}
	var aLine, bLine string
	for _, l := range strings.Split(res.stdout, "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == "a" {
			aLine = strings.Join(f, " ")
		}
		if len(f) > 0 && f[0] == "b" {
			bLine = strings.Join(f, " ")
		}
	}
	if bLine != "b 1 1 0 0 0 0" {
		t.Errorf("status of b %q, want \"b 1 1 0 0 0 0\" (size, ready, starting, claimed, claims, misses)", bLine)
	}
	// The claims the controller saw (a claim made just before a leader's
	// SIGKILL may be seen by nobody: the next leader lists it claimed).
	if !strings.HasPrefix(aLine, "a - 0 0 3 ") || strings.HasPrefix(aLine, "a - 0 0 3 0 ") {
		t.Errorf("status of a %q, want \"a - 0 0 3 N …\" (not in the file, 3 claimed, 1 to 3 claims)", aLine)
	}
}

// A ResourceQuota that fits only size-1 pods: the pool gets size-1 pods,
// a Warning Event on the controller's Lease says why, and the controller
// backs off instead of retrying in a loop.
func TestPoolControllerQuotaBacksOff(t *testing.T) {
	c := NewCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := c.NewNamespace(t, "poolctl-quota")
	const size = 3
	if _, err := c.Client.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse(fmt.Sprint(size - 1))}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.WaitFor(ctx, t, "the quota's status", func(ctx context.Context) (bool, error) {
		q, err := c.Client.CoreV1().ResourceQuotas(ns).Get(ctx, "pods", metav1.GetOptions{})
		return err == nil && q.Status.Hard != nil, err
	})
	kc := c.poolKubeconfig(ctx, t, ns)
	config := filepath.Join(t.TempDir(), "pools.yaml")
	poolWriteFile(t, config, poolEntry("q", size, "10m"))
	pc := startPoolController(t, kc, config, "ctl-q")
	c.waitIdle(ctx, t, ns, "q", size-1, 2*time.Minute)
	var ev *corev1.Event
	c.WaitFor(ctx, t, "a FailedCreate Event on the Lease", func(ctx context.Context) (bool, error) {
		list, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + poolctl.ReasonFailedCreate})
		if err != nil {
			return false, err
		}
		for i, e := range list.Items {
			if e.InvolvedObject.Kind == "Lease" && e.Type == corev1.EventTypeWarning {
				ev = &list.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	if !strings.Contains(ev.Message, "exceeded quota") {
		t.Errorf("event message %q does not say the quota is exceeded", ev.Message)
	}
	before := pc.metric(`tether_pool_pod_create_failures_total{pool="q",reason="FailedCreate"}`)
	time.Sleep(10 * time.Second)
	after := pc.metric(`tether_pool_pod_create_failures_total{pool="q",reason="FailedCreate"}`)
	// Back-off 1s, 2s, 4s, 8s: at most 4 tries in 10s (a hot loop makes hundreds).
	if after-before > 4 || after < 1 {
		t.Errorf("create failures %v → %v in 10s: want a back-off (at most 4 tries)", before, after)
	}
	if pods, _ := c.poolPods(ctx, t, ns, "q"); len(pods[contract.WarmIdle]) != size-1 {
		t.Errorf("%d idle pods, want %d", len(pods[contract.WarmIdle]), size-1)
	}
	if got := pc.metric(`tether_pool_warm_pods{pool="q",state="idle"}`); got != size-1 {
		t.Errorf("metric warm pods idle = %v, want %d", got, size-1)
	}
}

// Without the controller, warm pods end themselves after max-idle.
func TestPoolWarmPodsEndThemselvesWithoutController(t *testing.T) {
	c := NewCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := c.NewNamespace(t, "poolctl-idle")
	kc := c.poolKubeconfig(ctx, t, ns)
	config := filepath.Join(t.TempDir(), "pools.yaml")
	const maxIdle = 20 * time.Second
	poolWriteFile(t, config, poolEntry("idle", 2, maxIdle.String()))
	pc := startPoolController(t, kc, config, "ctl-idle")
	idle := c.waitIdle(ctx, t, ns, "idle", 2, 2*time.Minute)
	pc.kill()
	for _, p := range idle {
		var got *corev1.Pod
		c.WaitFor(ctx, t, "warm pod "+p.Name+" to end", func(ctx context.Context) (bool, error) {
			var err error
			got, err = c.Client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return got.Status.Phase == corev1.PodSucceeded || got.Status.Phase == corev1.PodFailed, nil
		})
		if end := podEnd(got); end.Sub(got.CreationTimestamp.Time) > maxIdle+30*time.Second {
			t.Errorf("pod %s ended %s after its creation; max-idle is %s", p.Name, end.Sub(got.CreationTimestamp.Time), maxIdle)
		}
	}
	if _, err := c.Client.CoreV1().Pods(ns).Get(ctx, idle[0].Name, metav1.GetOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Error(err)
	}
}

// podEnd is when a pod's build container ended (now when unknown).
func podEnd(p *corev1.Pod) time.Time {
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Terminated != nil {
			return s.State.Terminated.FinishedAt.Time
		}
	}
	return time.Now()
}

// The chart installed with helm: its Deployment runs `tether pool serve`
// from the CLI image in-cluster, with the chart's Role, and fills the
// pool of its values.
func TestPoolHelmChartOnNode(t *testing.T) {
	c := NewCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := c.NewNamespace(t, "poolctl-helm")
	u, err := url.Parse(c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	_, metricsPort, _ := net.SplitHostPort(poolFreeAddr(t))
	// The node has no kube-proxy: the pod reaches the apiserver on the
	// host's loopback (hostNetwork), so one replica and a free port.
	values := fmt.Sprintf(`replicas: 1
image: {tag: %q, pullPolicy: Never}
metrics: {port: %s}
logFormat: text
pools:
- name: helm
  image: %s
  helper-image: %s
  size: 2
  max-idle: 10m
pod:
  hostNetwork: true
  dnsPolicy: Default
  env:
    - {name: KUBERNETES_SERVICE_HOST, value: %q}
    - {name: KUBERNETES_SERVICE_PORT, value: %q}
`, imageTag(), metricsPort, BusyboxImage, HelperImage, host, port)
	vf := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(vf, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	gcHelm(t, c.Kubeconfig, "install", "pool", filepath.Join(gcRepoRoot, "deploy", "helm", "tether-pool"), "--namespace", ns, "--values", vf)
	t.Cleanup(func() { gcHelm(t, c.Kubeconfig, "uninstall", "pool", "--namespace", ns) })
	defer func() {
		if t.Failed() {
			pods, _ := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=pool"})
			for _, p := range pods.Items {
				c.DumpPod(t, ns, p.Name)
			}
		}
	}()
	c.waitIdle(ctx, t, ns, "helm", 2, 3*time.Minute)
	lease, err := c.Client.CoordinationV1().Leases(ns).Get(ctx, "tether-pool", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Errorf("Lease tether-pool: %v, %v: want a holder (the Deployment's replica)", err, lease)
	}
}
