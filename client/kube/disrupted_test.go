package kube

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
)

func disruptedPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "ci", ResourceVersion: "1"},
		Spec:       corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		}},
	}
}

// Each way Kubernetes disrupts a pod is told in its own words, on one line.
func TestPodDisruption(t *testing.T) {
	cond := func(reason, msg string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason, Message: msg})
		}
	}
	for _, tc := range []struct {
		change       func(*corev1.Pod)
		reason, want string
	}{
		{func(p *corev1.Pod) {
			p.Status.Phase, p.Status.Reason = corev1.PodFailed, "Evicted"
			p.Status.Message = "Pod ephemeral local storage usage exceeds the total limit of containers 10Mi.\n"
		}, ReasonEvicted, "pod ci/job: evicted by the kubelet: Pod ephemeral local storage usage exceeds the total limit of containers 10Mi."},
		{cond("EvictionByEvictionAPI", "Eviction API: evicting"), "EvictionByEvictionAPI", "pod ci/job: evicted by the Eviction API (node drain): Eviction API: evicting"},
		{cond("PreemptionByScheduler", "default-scheduler: preempting to accommodate a higher priority pod"), "PreemptionByScheduler", "pod ci/job: preempted by a higher-priority pod: default-scheduler: preempting"},
		{cond("TerminationByKubelet", "Pod was terminated in response to imminent node shutdown."), "TerminationByKubelet", "pod ci/job: terminated by the kubelet: Pod was terminated"},
		{cond("DeletionByTaintManager", "Taint manager: deleting due to NoExecute taint"), "DeletionByTaintManager", "pod ci/job: deleted by the taint manager (a NoExecute taint on its node): Taint manager"},
	} {
		p := disruptedPod()
		tc.change(p)
		e := podDisruption(p)
		if e == nil || e.Reason != tc.reason || !strings.HasPrefix(e.Error(), tc.want) || strings.Contains(e.Error(), "\n") {
			t.Errorf("podDisruption = %v; want reason %s and %q", e, tc.reason, tc.want)
			continue
		}
		if !errors.Is(e, client.ErrShimGone) {
			t.Errorf("%v does not wrap client.ErrShimGone", e)
		}
	}
	if e := podDisruption(disruptedPod()); e != nil {
		t.Errorf("a running pod: %v", e)
	}
	p := disruptedPod()
	cond("EvictionByEvictionAPI", "")(p)
	p.Status.Conditions[1].Status = corev1.ConditionFalse
	if e := podDisruption(p); e != nil {
		t.Errorf("a DisruptionTarget condition that is False: %v", e)
	}
}

// A pod the node controller marked not ready is only a lost node when
// the node says so.
func TestNodeDisruption(t *testing.T) {
	p := disruptedPod()
	if nodeLossSuspected(p) {
		t.Error("a ready pod is suspected")
	}
	p.Status.Conditions[0] = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"}
	if nodeLossSuspected(p) {
		t.Error("a pod the kubelet marked not ready is suspected")
	}
	p.Status.Conditions[0].Reason = ""
	if !nodeLossSuspected(p) {
		t.Error("a pod the node controller marked not ready is not suspected")
	}
	since := time.Date(2026, 1, 2, 12, 3, 4, 0, time.Local)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status.", LastTransitionTime: metav1.NewTime(since)},
	}}}
	e := nodeDisruption("ci", "job", node)
	if want := "pod ci/job: lost its node: node n1 is NotReady since 12:03:04: its kubelet stopped posting status"; e == nil || e.Error() != want || e.Reason != ReasonNodeNotReady {
		t.Errorf("nodeDisruption = %v; want %q", e, want)
	}
	node.Status.Conditions[0].Status = corev1.ConditionTrue
	if e := nodeDisruption("ci", "job", node); e != nil {
		t.Errorf("a Ready node: %v", e)
	}
}

// fakeConn is a connection that records its Close.
type fakeConn struct{ closed chan struct{} }

func (c *fakeConn) Read([]byte) (int, error)    { <-c.closed; return 0, io.EOF }
func (c *fakeConn) Write(p []byte) (int, error) { return len(p), nil }
func (c *fakeConn) Close() error {
	select {
	case <-c.closed:
	default:
		close(c.closed)
	}
	return nil
}

// The watch sees the pod's disruption as it happens: it closes the
// session's connection, and names the preemptor and its priority from the
// scheduler's event.
func TestDisruptionWatchPreemption(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prio := int32(1000)
	urgent := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "urgent", Namespace: "ci"}, Spec: corev1.PodSpec{Priority: &prio}}
	cs := fake.NewClientset(disruptedPod(), urgent)
	w := newDisruptionWatch(clientset.Wrap(cs), "ci", "job", slog.New(slog.DiscardHandler))
	done := make(chan struct{})
	go func() { defer close(done); w.run(ctx) }()
	conn := &fakeConn{closed: make(chan struct{})}
	tracked := w.track(conn)
	if w.settle(ctx, 300*time.Millisecond) != nil {
		t.Fatal("a disruption before any")
	}

	if _, err := cs.CoreV1().Events("ci").Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "job.1", Namespace: "ci"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ci", Name: "job"},
		Related:        &corev1.ObjectReference{Kind: "Pod", Namespace: "ci", Name: "urgent"},
		Reason:         "Preempted", Message: "Preempted by pod 1234 on node n1",
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := disruptedPod()
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "PreemptionByScheduler", Message: "default-scheduler: preempting to accommodate a higher priority pod"})
	if _, err := cs.CoreV1().Pods("ci").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e := w.settle(ctx, 10*time.Second)
	if want := "pod ci/job: preempted by pod ci/urgent, priority 1000"; e == nil || e.Error() != want {
		t.Fatalf("settle = %v; want %q", e, want)
	}
	select {
	case <-conn.closed:
	case <-time.After(5 * time.Second):
		t.Error("the session's connection was not closed")
	}
	_ = tracked.Close()
	<-done // the watch ends once it found a disruption
}

// An API server with the WatchList feature on and an etcd that cannot
// report watch progress refuses a watch from no version with an error
// event (as its watch cache does); the watch still sees the pod evicted
// through the Eviction API, from the version it read.
func TestDisruptionWatchWithoutWatchList(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := fake.NewClientset(disruptedPod())
	watching := make(chan struct{}, 16)
	cs.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		if a.(k8stesting.WatchAction).GetWatchRestrictions().ResourceVersion != "" {
			watching <- struct{}{}
			return false, nil, nil // the tracker's watch
		}
		refused := watch.NewFakeWithChanSize(1, false)
		refused.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 500, Reason: metav1.StatusReasonInternalError,
			Message: "a watch stream was requested by the client but the required storage feature RequestWatchProgress is disabled"})
		return true, refused, nil
	})
	w := newDisruptionWatch(clientset.Wrap(cs), "ci", "job", slog.New(slog.DiscardHandler))
	done := make(chan struct{})
	go func() { defer close(done); w.run(ctx) }()
	select {
	case <-watching:
	case <-time.After(10 * time.Second):
		t.Fatal("the pod was never watched from a version")
	}
	p := disruptedPod()
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: ReasonEvictionByEvictionAPI, Message: "Eviction API: evicting"})
	if _, err := cs.CoreV1().Pods("ci").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e := w.settle(ctx, 5*time.Second)
	if want := "pod ci/job: evicted by the Eviction API (node drain): Eviction API: evicting"; e == nil || e.Error() != want {
		t.Fatalf("settle = %v; want %q", e, want)
	}
	<-done
}
