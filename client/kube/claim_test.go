package kube

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
	"github.com/tether-ci/tether/protocol"
)

// warmRunning returns a warm pod of pool built from settings, as the
// controller left it once it ran and its shim answered.
func warmRunning(t *testing.T, settings Spec, pool string, created time.Time) *corev1.Pod {
	t.Helper()
	objs, err := WarmPod(settings, WarmOptions{Pool: pool, MaxIdle: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	pod := objs.Pod
	pod.Labels[LabelWarm] = WarmIdle
	pod.ResourceVersion = "1"
	pod.CreationTimestamp = metav1.NewTime(created)
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = &metav1.Time{Time: created.Add(time.Second)}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: BuildContainer, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	return pod
}

// casClientset is a fake clientset whose pod updates compare and swap the
// resourceVersion as the API server does: an update carrying an older one
// is a Conflict, a successful one increments it.
func casClientset(objs ...runtime.Object) *fake.Clientset {
	cs := fake.NewClientset(objs...)
	var mu sync.Mutex
	cs.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		up := a.(k8stesting.UpdateAction).GetObject().(*corev1.Pod)
		cur, err := cs.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), up.Namespace, up.Name)
		if err != nil {
			return true, nil, err
		}
		if rv := cur.(*corev1.Pod).ResourceVersion; rv != up.ResourceVersion {
			return true, nil, apierrors.NewConflict(corev1.Resource("pods"), up.Name, fmt.Errorf("resourceVersion %s, not %s", rv, up.ResourceVersion))
		}
		n, _ := strconv.Atoi(up.ResourceVersion)
		up = up.DeepCopy()
		up.ResourceVersion = strconv.Itoa(n + 1)
		return true, up, cs.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), up, up.Namespace)
	})
	return cs
}

// Of 20 concurrent claimers of a pool of 5 matching pods, exactly 5 get
// one, each a different pod; pods of other settings, other pools, not
// running or being deleted are never claimed.
func TestClaimConcurrent(t *testing.T) {
	now := time.Now()
	settings := poolSpec()
	var objs []runtime.Object
	for range 5 {
		objs = append(objs, warmRunning(t, settings, "small", now.Add(-time.Minute)))
	}
	other := poolSpec()
	other.Image = "alpine:3"
	objs = append(objs, warmRunning(t, other, "small", now))  // other settings
	objs = append(objs, warmRunning(t, settings, "big", now)) // other pool
	pending := warmRunning(t, settings, "small", now)
	pending.Status.Phase = corev1.PodPending
	deleting := warmRunning(t, settings, "small", now)
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	deleting.Finalizers = []string{"test"}
	objs = append(objs, pending, deleting)
	cs := casClientset(objs...)

	const claimers = 20
	pods := make([]*Pod, claimers)
	errs := make([]error, claimers)
	var wg sync.WaitGroup
	for i := range claimers {
		wg.Go(func() {
			spec := testSpec()
			spec.JobID = fmt.Sprintf("job-%d", i)
			pods[i], errs[i] = Claim(context.Background(), clientset.Wrap(cs), ClaimRequest{Pool: "small", Spec: spec})
		})
	}
	wg.Wait()
	got := map[string]bool{}
	for i := range claimers {
		var miss *MissError
		switch {
		case errs[i] == nil:
			if got[pods[i].Name] {
				t.Errorf("pod %s claimed twice", pods[i].Name)
			}
			got[pods[i].Name] = true
		case errors.As(errs[i], &miss) && errors.Is(errs[i], ErrNoWarmPod) &&
			(miss.Reason == MissRace || miss.Reason == MissEmpty || miss.Reason == MissSettings):
			// A claimer that lists after the five are taken sees only the
			// pod of other settings: a settings miss.
		default:
			t.Errorf("claimer %d: %v", i, errs[i])
		}
	}
	if len(got) != 5 {
		t.Fatalf("%d pods claimed, want 5", len(got))
	}
	for name := range got {
		p, _ := cs.CoreV1().Pods("ci").Get(context.Background(), name, metav1.GetOptions{})
		if p.Labels[LabelWarm] != WarmClaimed || p.Labels[LabelPool] != "small" {
			t.Errorf("claimed pod %s labels %v", name, p.Labels)
		}
	}
}

// The claim sets the job's deadline, TTL, labels and owner on the pod, and
// the job carries its data for the stream, none of it in the pod.
func TestClaimSetsTheJob(t *testing.T) {
	now := time.Now()
	pod := warmRunning(t, poolSpec(), "small", now.Add(-10*time.Minute))
	cs := casClientset(pod)
	spec := testSpec()
	spec.JobID, spec.TTL = "job-7", time.Hour
	spec.MaskEnv = []string{"TOKEN"}
	spec.Env["TOKEN"] = "s3cret-value"
	spec.Labels = map[string]string{"team": "blue", LabelWarm: "forged"}
	owner := &metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "runner-0", UID: "u-1"}
	p, err := Claim(context.Background(), clientset.Wrap(cs), ClaimRequest{Pool: "small", Spec: spec, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := cs.CoreV1().Pods("ci").Get(context.Background(), p.Name, metav1.GetOptions{})
	if got.Labels[LabelJob] != "job-7" || got.Labels["team"] != "blue" || got.Labels[LabelWarm] != WarmClaimed {
		t.Errorf("labels %v", got.Labels)
	}
	ttl, _ := strconv.Atoi(got.Annotations[AnnotationTTL])
	if ttl < 4200 || ttl > 4210 {
		t.Errorf("TTL annotation %d, want about 10m (age) + 1h", ttl)
	}
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].Name != "runner-0" {
		t.Errorf("ownerReferences %v", got.OwnerReferences)
	}
	// 10 min timeout + default margin (2m + 10s grace + 5m after), from the
	// pod's start 9m59s ago.
	want := int64((9*time.Minute + 59*time.Second + 10*time.Minute + 2*time.Minute + 10*time.Second + 5*time.Minute) / time.Second)
	if ads := got.Spec.ActiveDeadlineSeconds; ads == nil || *ads < want || *ads > want+5 {
		t.Errorf("activeDeadlineSeconds %v, want about %d", ads, want)
	}
	job := p.Job
	if job.ID != "job-7" || job.Deadline != 10*time.Minute || job.TTL != time.Hour || len(job.Mask) != 1 || job.Mask[0] != "s3cret-value" {
		t.Errorf("job %+v", job)
	}
	if len(job.Scripts) != 2 || len(job.After) != 1 || len(job.Files) != 4 || job.EnvFile == "" {
		t.Fatalf("job scripts %v after %v files %d env file %q", job.Scripts, job.After, len(job.Files), job.EnvFile)
	}
	for _, f := range job.Files {
		if f.Path == job.EnvFile {
			env, err := protocol.ParseEnvFile(f.Content)
			if err != nil || len(env) != 2 {
				t.Errorf("env file %q: %v", env, err)
			}
		}
	}
}

func TestClaimMisses(t *testing.T) {
	ctx := context.Background()
	spec := testSpec()
	reason := func(err error) MissReason {
		var m *MissError
		if !errors.As(err, &m) || !errors.Is(err, ErrNoWarmPod) {
			t.Fatalf("error %v is not a MissError", err)
		}
		return m.Reason
	}
	if _, err := Claim(ctx, clientset.Wrap(casClientset()), ClaimRequest{Pool: "small", Spec: spec}); reason(err) != MissEmpty {
		t.Errorf("empty pool: %v", err)
	}
	other := poolSpec()
	other.TTY = true
	if _, err := Claim(ctx, clientset.Wrap(casClientset(warmRunning(t, other, "small", time.Now()))), ClaimRequest{Pool: "small", Spec: spec}); reason(err) != MissSettings {
		t.Errorf("other settings: %v", err)
	}
	cs := casClientset(warmRunning(t, poolSpec(), "small", time.Now()))
	cs.PrependReactor("update", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "x", errors.New("no update"))
	})
	if _, err := Claim(ctx, clientset.Wrap(cs), ClaimRequest{Pool: "small", Spec: spec}); reason(err) != MissAPI {
		t.Errorf("forbidden: %v", err)
	}
	bad := spec
	bad.Image = ""
	if _, err := Claim(ctx, clientset.Wrap(casClientset()), ClaimRequest{Pool: "small", Spec: bad}); err == nil || errors.Is(err, ErrNoWarmPod) {
		t.Errorf("invalid spec: %v, want an error that is no miss", err)
	}
}

// A warm pod is evictable while idle (no budget, no do-not-evict
// annotations); its claim protects it as a cold pod is: the annotations
// and a PodDisruptionBudget selecting the job's pod alone, owned by it.
// A job with NoDisruptionProtection leaves it unprotected.
func TestClaimProtects(t *testing.T) {
	ctx := context.Background()
	objs, err := WarmPod(poolSpec(), WarmOptions{Pool: "small", MaxIdle: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if objs.Protect {
		t.Error("a warm pod is created with a PodDisruptionBudget: idle, it must stay evictable")
	}
	for k := range ProtectionAnnotations() {
		if _, ok := objs.Pod.Annotations[k]; ok {
			t.Errorf("a warm pod has the protection annotation %s while idle", k)
		}
	}
	for _, off := range []bool{false, true} {
		pod := warmRunning(t, poolSpec(), "small", time.Now())
		cs := casClientset(pod)
		spec := testSpec()
		spec.JobID, spec.NoDisruptionProtection = "job-9", off
		p, err := Claim(ctx, clientset.Wrap(cs), ClaimRequest{Pool: "small", Spec: spec})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := cs.CoreV1().Pods("ci").Get(ctx, p.Name, metav1.GetOptions{})
		pdbs, _ := cs.PolicyV1().PodDisruptionBudgets("ci").List(ctx, metav1.ListOptions{})
		if off {
			if len(pdbs.Items) != 0 || got.Annotations[AnnotationDoNotDisrupt] != "" {
				t.Errorf("NoDisruptionProtection: %d budgets, annotations %v; want none", len(pdbs.Items), got.Annotations)
			}
			continue
		}
		for k, v := range ProtectionAnnotations() {
			if got.Annotations[k] != v {
				t.Errorf("claimed pod: annotation %s=%q, want %q", k, got.Annotations[k], v)
			}
		}
		if len(pdbs.Items) != 1 {
			t.Fatalf("%d PodDisruptionBudgets after the claim, want 1", len(pdbs.Items))
		}
		b := pdbs.Items[0]
		if b.Spec.Selector.MatchLabels[LabelJob] != "job-9" || len(b.OwnerReferences) != 1 || b.OwnerReferences[0].Name != p.Name || b.Spec.MinAvailable.IntValue() != 1 {
			t.Errorf("budget %+v: want minAvailable 1 selecting job-9, owned by pod %s", b, p.Name)
		}
	}
}

// A miss is recorded as an Event of the job's namespace that `tether pool
// status` and the controller count: reason WarmPodMiss, the pool and the
// miss's reason in its annotations.
func TestClaimRecordsMisses(t *testing.T) {
	ctx := context.Background()
	cs := casClientset()
	if _, err := Claim(ctx, clientset.Wrap(cs), ClaimRequest{Pool: "small", Spec: testSpec()}); !errors.Is(err, ErrNoWarmPod) {
		t.Fatalf("empty pool: %v", err)
	}
	events, err := cs.CoreV1().Events("ci").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) != 1 {
		t.Fatalf("%d Events after a miss, want 1", len(events.Items))
	}
	e := events.Items[0]
	if e.Reason != "WarmPodMiss" || e.Annotations["tether.dev/pool"] != "small" || e.Annotations["tether.dev/miss-reason"] != "empty" ||
		e.InvolvedObject.Kind != "Namespace" || e.InvolvedObject.Name != "ci" || e.Namespace != "ci" || e.LastTimestamp.IsZero() {
		t.Errorf("miss Event %+v", e)
	}
	// No right to create Events: the miss is still a miss, nothing more.
	cs = casClientset()
	cs.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("events"), "", errors.New("no"))
	})
	var m *MissError
	if _, err := Claim(ctx, clientset.Wrap(cs), ClaimRequest{Pool: "small", Spec: testSpec()}); !errors.As(err, &m) || m.Reason != MissEmpty {
		t.Fatalf("miss without the right to record it: %v", err)
	}
}
