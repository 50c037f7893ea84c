//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
)

// poolSettings are the pod settings of the e2e pools: what `tether run
// --image IMAGE --helper-image HelperImage` gives a job.
func poolSettings(ns, image string) kube.Spec {
	return kube.Spec{Namespace: ns, Image: image, HelperImage: HelperImage}
}

// startWarmPods creates n warm pods of pool with settings, as the pool's
// controller does (kube.WarmPod, then kube.MarkWarmReady once each runs),
// and returns their names.
func startWarmPods(ctx context.Context, t *testing.T, c *Cluster, pool string, settings kube.Spec, n int) []string {
	t.Helper()
	names := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			objs, err := kube.WarmPod(settings, kube.WarmOptions{Pool: pool, MaxIdle: 10 * time.Minute})
			if err != nil {
				errs[i] = err
				return
			}
			pod, err := kube.Create(ctx, clientset.Wrap(c.Client), objs, kubeLogger(t))
			if err != nil {
				errs[i] = err
				return
			}
			names[i] = pod.Name
			if err := pod.WaitRunning(ctx, kube.WaitOptions{Timeout: 2 * time.Minute}); err != nil {
				errs[i] = err
				return
			}
			// WaitRunning ends at the container's start; the pod's phase
			// says Running a moment later, and the controller marks a pod
			// ready only once its informer shows it Running.
			errs[i] = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				got, err := pod.Get(ctx)
				if err != nil {
					return false, err
				}
				if got.Status.Phase != corev1.PodRunning {
					return false, nil
				}
				_, err = kube.MarkWarmReady(ctx, clientset.Wrap(c.Client), got)
				return err == nil, err
			})
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, name := range names {
			if name != "" {
				_ = c.Client.CoreV1().Pods(settings.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("start the warm pods: %v", err)
	}
	return names
}

// podsByWarmState counts the pods of ns by their warm-state label.
func podsByWarmState(ctx context.Context, t *testing.T, c *Cluster, ns string) map[string]int {
	t.Helper()
	list, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelWarm})
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			n[p.Labels[kube.LabelWarm]]++
		}
	}
	return n
}

// TestKubePoolSecretNeverInThePod: a job's secret variable reaches its
// script on a warm pod, but neither the pod's spec (before or after the
// claim), nor a ConfigMap, Secret or Event of the namespace, nor the
// container's log ever holds it. The claim set the job's deadline, TTL and labels.
func TestKubePoolSecretNeverInThePod(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "poolsecret")
	warm := startWarmPods(ctx, t, c, "sec", poolSettings(ns, BusyboxImage), 1)
	const secret = "warm-secret-5c1f9e"
	noSecret := func(when string) {
		t.Helper()
		pod, err := c.Client.CoreV1().Pods(ns).Get(ctx, warm[0], metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(pod)
		if strings.Contains(string(b), secret) {
			t.Errorf("%s: the warm pod holds the secret:\n%s", when, b)
		}
		cms, _ := c.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		secs, _ := c.Client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
		b, _ = json.Marshal([]any{cms, secs})
		if strings.Contains(string(b), secret) {
			t.Errorf("%s: a ConfigMap or Secret of %s holds the secret", when, ns)
		}
		evs, _ := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if b, _ = json.Marshal(evs); strings.Contains(string(b), secret) {
			t.Errorf("%s: an Event of %s holds the secret", when, ns)
		}
		rc, err := c.Client.CoreV1().Pods(ns).GetLogs(warm[0], &corev1.PodLogOptions{Container: kube.BuildContainer}).Stream(ctx)
		if err != nil {
			t.Fatalf("%s: read the pod's log: %v", when, err)
		}
		defer rc.Close()
		logs, _ := io.ReadAll(rc)
		if strings.Contains(string(logs), secret) {
			t.Errorf("%s: the pod's log holds the secret:\n%s", when, logs)
		}
	}
	noSecret("before the claim")
	script := writeScripts(t, []string{"job.sh"}, map[string]string{"job.sh": "[ \"$SECRET\" = " + secret + " ] && echo \"has the secret: $SECRET\"\necho \"pod=$HOSTNAME\"\n"})[0]
	res := runCLI(ctx, t, c, bin, "run", "--pool", "sec", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns,
		"--env", "SECRET="+secret, "--mask-env", "SECRET", "--timeout", "7m", "--ttl", "1h", "--label", "team=blue", "--keep", script)
	t.Logf("stderr:\n%s", res.stderr)
	if want := "has the secret: [MASKED]\npod=" + warm[0] + "\n"; res.code != 0 || res.stdout != want {
		t.Fatalf("exit %d, stdout %q; want 0 and %q", res.code, res.stdout, want)
	}
	noSecret("after the job")
	pod, err := c.Client.CoreV1().Pods(ns).Get(ctx, warm[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Labels[kube.LabelWarm] != kube.WarmClaimed || pod.Labels["team"] != "blue" || pod.Labels[kube.LabelJob] == "" {
		t.Errorf("claimed pod's labels %v", pod.Labels)
	}
	if pod.Annotations[kube.AnnotationClaimedAt] == "" {
		t.Errorf("claimed pod has no %s", kube.AnnotationClaimedAt)
	}
	// The job's 7m timeout plus the margin, counted from the claim.
	if ads := pod.Spec.ActiveDeadlineSeconds; ads == nil || *ads < 7*60 || *ads > 30*60 {
		t.Errorf("activeDeadlineSeconds %v, want the job's timeout plus margin", ads)
	}
	if ttl, err := strconv.Atoi(pod.Annotations[kube.AnnotationTTL]); err != nil || ttl < 3600 || ttl > 3600+600 {
		t.Errorf("TTL annotation %d, want the job's 1h counted from the pod's creation", ttl)
	}
}

// TestKubePoolSettingsDiffer: a job whose pod settings differ from the
// pool's (another image) is not given the pool's pod: it runs on a cold
// pod and the warm pod stays idle.
func TestKubePoolSettingsDiffer(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "pooldiff")
	warm := startWarmPods(ctx, t, c, "bash", poolSettings(ns, BashImage), 1)
	script := writeScripts(t, []string{"job.sh"}, map[string]string{"job.sh": "echo \"pod=$HOSTNAME\"\n"})[0]
	res := runCLI(ctx, t, c, bin, "run", "--pool", "bash", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns,
		"-v", "--timeout", "5m", script)
	t.Logf("stderr:\n%s", res.stderr)
	if res.code != 0 || res.stdout == "pod="+warm[0]+"\n" || !strings.HasPrefix(res.stdout, "pod=") {
		t.Fatalf("exit %d, stdout %q: want 0 on a cold pod", res.code, res.stdout)
	}
	if !strings.Contains(res.stderr, "settings") {
		t.Errorf("the debug log does not say the settings differ:\n%s", res.stderr)
	}
	if n := podsByWarmState(ctx, t, c, ns); n[kube.WarmIdle] != 1 || n[kube.WarmClaimed] != 0 {
		t.Errorf("warm pods by state %v: want the one idle", n)
	}
}

// TestKubePoolPodGoneBeforeAttach: a warm pod deleted between its claim
// and the attach never makes a script failure or a hang: the session ends
// with a system failure (no result), and no script ran.
func TestKubePoolPodGoneBeforeAttach(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "poolgone")
	startWarmPods(ctx, t, c, "gone", poolSettings(ns, BusyboxImage), 1)
	spec := kubeSpec(ns, BusyboxImage, "echo must not run\n")
	// The pool's settings (poolSettings names no pull policy).
	spec.IdleTimeout, spec.Labels, spec.PullPolicy = 0, nil, ""
	pod, err := kube.Claim(ctx, clientset.Wrap(c.Client), kube.ClaimRequest{Pool: "gone", Spec: spec, Logger: kubeLogger(t)})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	zero := int64(0)
	if err := c.Client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	c.WaitFor(ctx, t, "the claimed pod gone", func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return err != nil, ignoreNotFound(err)
	})
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	out := &safeBuffer{}
	res, err := client.Run(rctx, pod.Transport(c.Config, kube.TransportOptions{Logger: kubeLogger(t)}), pod.Job,
		client.Options{Output: out, Logger: kubeLogger(t), ExitShim: true})
	if rctx.Err() != nil {
		t.Fatalf("the session hung on a deleted warm pod")
	}
	if !errors.Is(err, client.ErrNoResult) || len(res.Statuses) != 0 || out.Len() != 0 {
		t.Fatalf("Run on a deleted pod: err %v, statuses %v, output %q; want a system failure (ErrNoResult) and no script", err, res.Statuses, out.Bytes())
	}
}
