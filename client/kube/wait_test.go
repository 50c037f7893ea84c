package kube

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	ktesting "k8s.io/client-go/testing"
)

func podWith(phase corev1.PodPhase, mutate func(*corev1.PodStatus)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ci"}}
	p.Status.Phase = phase
	if mutate != nil {
		mutate(&p.Status)
	}
	return p
}

func newWaiter() *waiter {
	return &waiter{
		pod:   &Pod{Namespace: "ci", Name: "p", Container: BuildContainer, Logger: slog.New(slog.DiscardHandler)},
		opts:  WaitOptions{}.withDefaults(),
		since: map[string]time.Time{},
	}
}

func TestAssess(t *testing.T) {
	now := time.Now()
	running := func(s *corev1.PodStatus) {
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: BuildContainer, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	}
	waiting := func(name, reason string) func(*corev1.PodStatus) {
		return func(s *corev1.PodStatus) {
			s.ContainerStatuses = []corev1.ContainerStatus{{Name: name, Image: "img:1",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "details"}}}}
		}
	}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		done    bool
		errLike string
	}{
		{"pending", podWith(corev1.PodPending, nil), false, ""},
		{"running", podWith(corev1.PodRunning, running), true, ""},
		{"image pull", podWith(corev1.PodPending, waiting(BuildContainer, "ErrImagePull")), false, "cannot be pulled: ErrImagePull: details"},
		{"backoff", podWith(corev1.PodPending, waiting(BuildContainer, "ImagePullBackOff")), false, "cannot be pulled"},
		{"never pull", podWith(corev1.PodPending, waiting(InitContainer, "ErrImageNeverPull")), false, "cannot be pulled"},
		{"init failed", podWith(corev1.PodPending, func(s *corev1.PodStatus) {
			s.InitContainerStatuses = []corev1.ContainerStatus{{Name: InitContainer, Image: "helper",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 127, Reason: "Error"}}}}
		}), false, "init container tether-init of pod ci/p failed with exit code 127"},
		{"ended", podWith(corev1.PodSucceeded, nil), false, "ended before the job could start"},
		{"config error once", podWith(corev1.PodPending, waiting(BuildContainer, "CreateContainerConfigError")), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done, err := newWaiter().assess(tc.pod, now)
			if done != tc.done {
				t.Errorf("done = %v, want %v", done, tc.done)
			}
			switch {
			case tc.errLike == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.errLike != "" && (err == nil || !strings.Contains(err.Error(), tc.errLike)):
				t.Errorf("error %v, want one containing %q", err, tc.errLike)
			}
		})
	}
}

func TestAssessLingeringProblems(t *testing.T) {
	t0 := time.Now()
	unsched := podWith(corev1.PodPending, func(s *corev1.PodStatus) {
		s.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: insufficient cpu"}}
	})
	w := newWaiter()
	if _, err := w.assess(unsched, t0); err != nil {
		t.Fatalf("unschedulable at once: %v", err)
	}
	if _, err := w.assess(unsched, t0.Add(DefaultScheduleTimeout-time.Second)); err != nil {
		t.Fatalf("unschedulable before the timeout: %v", err)
	}
	// Scheduled in between resets the clock.
	if _, err := w.assess(podWith(corev1.PodPending, nil), t0.Add(DefaultScheduleTimeout-time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.assess(unsched, t0.Add(DefaultScheduleTimeout)); err != nil {
		t.Fatalf("unschedulable again, clock should restart: %v", err)
	}
	_, err := w.assess(unsched, t0.Add(2*DefaultScheduleTimeout+time.Second))
	if err == nil || !strings.Contains(err.Error(), "insufficient cpu") {
		t.Fatalf("unschedulable past the timeout: %v", err)
	}

	cfgErr := podWith(corev1.PodPending, func(s *corev1.PodStatus) {
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: BuildContainer,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: `secret "x" not found`}}}}
	})
	w = newWaiter()
	if _, err := w.assess(cfgErr, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := w.assess(cfgErr, t0.Add(DefaultConfigErrorTimeout)); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("config error past its timeout: %v", err)
	}
}

// TestWaitRunningFollowsWatch drives WaitRunning through a fake API: the
// pod turns Running after a while, or fails to pull its image.
func TestWaitRunningFollowsWatch(t *testing.T) {
	for _, tc := range []struct {
		name    string
		update  func(*corev1.PodStatus)
		wantErr string
	}{
		{"running", func(s *corev1.PodStatus) {
			s.Phase = corev1.PodRunning
			s.ContainerStatuses = []corev1.ContainerStatus{{Name: BuildContainer, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}, ""},
		{"pull error", func(s *corev1.PodStatus) {
			s.ContainerStatuses = []corev1.ContainerStatus{{Name: BuildContainer, Image: "nope:1",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "back-off pulling"}}}}
		}, "image nope:1 of container build cannot be pulled: ImagePullBackOff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cs, _, p := createTestPod(ctx, t)
			watches := trackWatches(cs)
			go func() {
				// The change comes once WaitRunning watches the pod.
				if !watches.await(ctx, 1, "pods") {
					return
				}
				pod, err := cs.CoreV1().Pods("ci").Get(ctx, p.Name, metav1.GetOptions{})
				if err != nil {
					return
				}
				tc.update(&pod.Status)
				_, _ = cs.CoreV1().Pods("ci").UpdateStatus(ctx, pod, metav1.UpdateOptions{})
			}()
			// The wait's own timeout is far away: WaitRunning must act on
			// the status change it is sent, not run into it.
			err := p.WaitRunning(ctx, WaitOptions{Timeout: 2 * time.Minute})
			switch {
			case err != nil && strings.Contains(err.Error(), "did not start within"):
				t.Fatalf("WaitRunning ran into its timeout instead of noticing the change: %v", err)
			case tc.wantErr == "" && err != nil:
				t.Fatalf("WaitRunning: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("WaitRunning: %v; want %q", err, tc.wantErr)
			}
		})
	}
}

func TestPullFailureEvent(t *testing.T) {
	ev := func(typ, reason, msg string) *corev1.Event {
		return &corev1.Event{Type: typ, Reason: reason, Message: msg, InvolvedObject: corev1.ObjectReference{
			Namespace: "ci", Name: "p", FieldPath: "spec.containers{build}"}}
	}
	if err := pullFailure(ev(corev1.EventTypeWarning, "Failed", "Error: ErrImagePull")); err == nil ||
		!strings.Contains(err.Error(), "spec.containers{build} of pod ci/p cannot be pulled: ErrImagePull") {
		t.Fatalf("ErrImagePull event: %v", err)
	}
	for _, e := range []*corev1.Event{
		ev(corev1.EventTypeWarning, "Failed", "Failed to pull image \"x\": not found"), // the reason comes next
		ev(corev1.EventTypeWarning, "Failed", "Error: CreateContainerConfigError"),
		ev(corev1.EventTypeNormal, "Pulling", "Pulling image \"x\""),
		ev(corev1.EventTypeWarning, "BackOff", "Back-off pulling image \"x\""),
	} {
		if err := pullFailure(e); err != nil {
			t.Errorf("%s %s %q: %v; want no failure", e.Type, e.Reason, e.Message, err)
		}
	}
}

// startedEvent is the kubelet's Started event for the container at
// fieldPath of p (in namespace "ci").
func startedEvent(p *Pod, name, fieldPath string) *corev1.Event {
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ci"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ci", Name: p.Name, UID: p.UID(),
			FieldPath: fieldPath},
		Type: corev1.EventTypeNormal, Reason: "Started", Message: "Started container",
	}
}

// TestWaitRunningEndsAtStartedEvent: the kubelet's "Started" event for the
// build container ends the wait before the pod's status says Running; the
// same event for the init container does not.
func TestWaitRunningEndsAtStartedEvent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, _, p := createTestPod(ctx, t)
	watches := trackWatches(cs)
	event := func(name, fieldPath string) {
		if _, err := cs.CoreV1().Events("ci").Create(ctx, startedEvent(p, name, fieldPath), metav1.CreateOptions{}); err != nil {
			t.Error(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- p.WaitRunning(ctx, WaitOptions{Timeout: 10 * time.Second}) }()
	watches.wait(ctx, t, 1, "events")
	event("init-started", "spec.initContainers{"+InitContainer+"}")
	select {
	case err := <-done:
		t.Fatalf("WaitRunning ended at the init container's Started event: %v", err)
	case <-time.After(1500 * time.Millisecond):
	}
	event("build-started", "spec.containers{"+BuildContainer+"}")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("WaitRunning: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitRunning did not end at the build container's Started event")
	}
}

// The job whose wait starts the event watch still sees its pod's events
// from before it (a `tether run` creates its pod first): a build container
// that already has its Started event ends the wait, though the pod's
// status never says Running.
func TestWaitRunningSeesItsPodsEarlierEvents(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, _, p := createTestPod(ctx, t)
	ev := startedEvent(p, "build-started", "spec.containers{"+BuildContainer+"}")
	ev.CreationTimestamp = metav1.Now()
	if _, err := cs.CoreV1().Events("ci").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitRunning(ctx, WaitOptions{Timeout: 5 * time.Second}); err != nil {
		t.Fatalf("WaitRunning: %v; want it ended by the earlier Started event", err)
	}
}

// hideFromLists makes cs answer pod lists without any pod, as the API
// server's watch cache can a moment before a pod just created shows up in
// it (an informer's first list reads the cache): pods then come only by
// the watch that follows.
func hideFromLists(cs interface {
	PrependReactor(verb, resource string, fn ktesting.ReactionFunc)
}) {
	cs.PrependReactor("list", "pods", func(ktesting.Action) (bool, runtime.Object, error) {
		return true, &corev1.PodList{}, nil
	})
}

func countVerb(cs *fake.Clientset, verb string) int {
	n := 0
	for _, v := range verbs(cs) {
		if v == verb {
			n++
		}
	}
	return n
}

// A pod the first list lacks comes by the watch: WaitRunning follows it
// without asking the API server for it.
func TestWaitRunningTakesALatePodFromTheWatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, _, p := createTestPod(ctx, t)
	hideFromLists(cs)
	watches := trackWatches(cs)
	go func() {
		// The change comes once WaitRunning watches the pod.
		if !watches.await(ctx, 1, "pods") {
			return
		}
		pod, err := cs.CoreV1().Pods("ci").Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return
		}
		pod.Status.Phase = corev1.PodRunning
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: BuildContainer, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		_, _ = cs.CoreV1().Pods("ci").UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	}()
	if err := p.WaitRunning(ctx, WaitOptions{Timeout: 10 * time.Second}); err != nil {
		t.Fatalf("WaitRunning: %v", err)
	}
	// The test's own Get above is the only one.
	if n := countVerb(cs, "get pods"); n != 1 {
		t.Fatalf("%d pod GETs; want none from WaitRunning: %v", n, verbs(cs))
	}
}

// A pod deleted before the informer's list never comes: WaitRunning asks
// whether it exists and says it was deleted.
func TestWaitRunningNoticesAPodDeletedBeforeTheList(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, _, p := createTestPod(ctx, t)
	if err := p.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	err := p.WaitRunning(ctx, WaitOptions{Timeout: 15 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "was deleted while starting") {
		t.Fatalf("WaitRunning: %v; want the pod's deletion", err)
	}
}
