package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	ktesting "k8s.io/client-go/testing"

	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
)

// apiCalls counts the fake clientset's requests by "verb resource".
type apiCalls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *apiCalls) count(a ktesting.Action) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[a.GetVerb()+" "+a.GetResource().Resource]++
}

func (c *apiCalls) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

func (c *apiCalls) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprint(c.n)
}

// countCalls makes cs count every request it serves.
func countCalls(cs *fake.Clientset) *apiCalls {
	c := &apiCalls{n: map[string]int{}}
	cs.PrependReactor("*", "*", func(a ktesting.Action) (bool, runtime.Object, error) {
		c.count(a)
		return false, nil, nil
	})
	cs.PrependWatchReactor("*", func(a ktesting.Action) (bool, watch.Interface, error) {
		c.count(a)
		return false, nil, nil
	})
	return c
}

// A pod watch the API server refuses (RBAC that allows get and list but not
// watch) is retried with backoff: within a 3 s wait a handful of requests,
// not a Get+Watch loop running as fast as the server answers.
func TestWaitRunningBacksOffAFailingWatch(t *testing.T) {
	ctx := context.Background()
	cs, _, p := createTestPod(ctx, t)
	calls := countCalls(cs)
	cs.PrependWatchReactor("pods", func(a ktesting.Action) (bool, watch.Interface, error) {
		calls.count(a)
		return true, nil, errors.New(`pods is forbidden: User "runner" cannot watch resource "pods"`)
	})
	err := p.WaitRunning(ctx, WaitOptions{Timeout: 3 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "did not start within 3s") {
		t.Fatalf("WaitRunning: %v; want the start timeout", err)
	}
	watches, gets, lists := calls.get("watch pods"), calls.get("get pods"), calls.get("list pods")
	t.Logf("requests in 3s: %s", calls)
	if watches == 0 {
		t.Fatal("the pod was never watched")
	}
	// client-go's reflector waits 800ms, then longer, between tries.
	if watches > 8 || gets+lists > 8 {
		t.Fatalf("%d pod watches, %d gets and %d lists in 3s: the failing watch is retried without backoff", watches, gets, lists)
	}
}

// N jobs of one process waiting at once share one pod watch and one event
// watch per namespace, and each still sees its own pod start.
func TestWaitRunningSharesWatches(t *testing.T) {
	const jobs = 20
	cs := fakeCluster()
	watches := trackWatches(cs) // before countCalls, whose reactor then runs first
	calls := countCalls(cs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wt := NewWatcher(clientset.Wrap(cs))
	defer wt.Close()
	var pods []*Pod
	for _, ns := range []string{"ci", "ci-large"} {
		for range jobs / 2 {
			spec := testSpec()
			spec.Namespace = ns
			objs, err := Build(spec)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Create(ctx, clientset.Wrap(cs), objs, nil)
			if err != nil {
				t.Fatal(err)
			}
			p.Watcher = wt
			pods = append(pods, p)
		}
	}
	errs := make(chan error, jobs)
	for _, p := range pods {
		go func() { errs <- p.WaitRunning(ctx, WaitOptions{Timeout: 20 * time.Second}) }()
	}
	// Every job subscribed and the informers listed before the pods start,
	// so each start must come through the shared watches.
	started := make(chan bool, 1)
	go func() { started <- watches.await(ctx, 2, "pods", "events") }()
	select {
	case err := <-errs:
		t.Fatalf("a wait ended before its pod started: %v", err)
	case ok := <-started:
		if !ok {
			t.Fatalf("the watches never started: %s", calls)
		}
	}
	gets := calls.get("get pods")
	for _, p := range pods {
		pod, err := cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.Status.Phase = corev1.PodRunning
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: BuildContainer, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		if _, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for range pods {
		if err := <-errs; err != nil {
			t.Fatalf("WaitRunning: %v", err)
		}
	}
	t.Logf("requests for %d jobs in 2 namespaces: %s", jobs, calls)
	if w, e := calls.get("watch pods"), calls.get("watch events"); w != 2 || e != 2 {
		t.Fatalf("%d pod watches and %d event watches for %d jobs in 2 namespaces; want one of each per namespace (%s)", w, e, jobs, calls)
	}
	if g := gets; g > 0 {
		t.Errorf("%d pod gets while waiting; the shared caches should answer", g)
	}
	// A later job reuses the running informers; Close stops them.
	wt.mu.Lock()
	kept := len(wt.ns)
	wt.mu.Unlock()
	wt.Close()
	wt.mu.Lock()
	left := len(wt.ns)
	wt.mu.Unlock()
	if kept != 2 || left != 0 {
		t.Errorf("%d namespaces watched after the jobs, %d after Close; want 2, then 0", kept, left)
	}
}

// buildStarted creates the kubelet's Started event of p's build container.
func buildStarted(ctx context.Context, t *testing.T, cs *fake.Clientset, p *Pod) {
	t.Helper()
	ev := startedEvent(p, p.Name+".started", "spec.containers{"+BuildContainer+"}")
	ev.CreationTimestamp = metav1.Now()
	if _, err := cs.CoreV1().Events("ci").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A runner's first jobs create their pods before the shared event watch
// starts: each wait still sees its pod's earlier events, not only the job
// whose wait started the watch. Here the second pod's build container has
// started (its Started event) before the watch began, and its status never
// says Running: only that event ends its wait.
func TestWaitRunningSeesEarlierEventsOfEveryFirstJob(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := fakeCluster()
	watches := trackWatches(cs)
	wt := NewWatcher(clientset.Wrap(cs))
	defer wt.Close()
	var pods []*Pod
	for range 2 {
		_, p := createPodIn(ctx, t, cs)
		p.Watcher = wt
		pods = append(pods, p)
	}
	buildStarted(ctx, t, cs, pods[1])
	first := make(chan error, 1)
	go func() { first <- pods[0].WaitRunning(ctx, WaitOptions{Timeout: 20 * time.Second}) }()
	watches.wait(ctx, t, 1, "events")
	if err := pods[1].WaitRunning(ctx, WaitOptions{Timeout: 5 * time.Second}); err != nil {
		t.Fatalf("the second job's wait: %v; want it ended by its pod's Started event from before the watch", err)
	}
	buildStarted(ctx, t, cs, pods[0])
	if err := <-first; err != nil {
		t.Fatalf("the first job's wait: %v", err)
	}
}

// A runner that starts the namespace's watch before it creates its pods
// (Watcher.Watch) gets every event of theirs from the watch: no list of a
// pod's earlier events.
func TestWatcherWatchBeforeTheFirstPod(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := fakeCluster()
	watches := trackWatches(cs) // before countCalls, whose reactor then runs first
	calls := countCalls(cs)
	wt := NewWatcher(clientset.Wrap(cs))
	defer wt.Close()
	if err := wt.Watch(ctx, "ci"); err != nil {
		t.Fatal(err)
	}
	// An API server's watch starts at the list's resource version; the
	// fake's only once registered.
	watches.wait(ctx, t, 1, "pods", "events")
	_, p := createPodIn(ctx, t, cs)
	p.Watcher = wt
	buildStarted(ctx, t, cs, p)
	if err := p.WaitRunning(ctx, WaitOptions{Timeout: 10 * time.Second}); err != nil {
		t.Fatalf("WaitRunning: %v", err)
	}
	if n := calls.get("list events"); n != 1 {
		t.Fatalf("%d event lists; want only the feed's own (%s)", n, calls)
	}
	// A namespace whose caches cannot sync: its lists are refused (a
	// fast fake could otherwise sync before Watch looks at its context).
	cs.PrependReactor("list", "*", func(a ktesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "other" {
			return true, nil, errors.New(`forbidden: User "runner" cannot list in namespace "other"`)
		}
		return false, nil, nil
	})
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	other := NewWatcher(clientset.Wrap(cs))
	defer other.Close()
	if err := other.Watch(cctx, "other"); err == nil || !strings.Contains(err.Error(), "namespace other") {
		t.Fatalf("Watch with a cancelled context: %v; want an error naming the namespace", err)
	}
}
