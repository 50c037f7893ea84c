package kube

import (
	"bytes"
	"fmt"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fullStatus is a container status with every field the API server fills.
func fullStatus(name string, state corev1.ContainerState) corev1.ContainerStatus {
	started, ready := true, false
	return corev1.ContainerStatus{
		Name: name, Image: "registry.example/" + name + ":1", ImageID: "sha256:0123", ContainerID: "containerd://abc",
		State: state, LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3, Reason: "Error"}},
		Ready: ready, Started: &started, RestartCount: 2,
		AllocatedResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		VolumeMounts:       []corev1.VolumeMountStatus{{Name: "tether", MountPath: "/tether"}},
	}
}

// fullPods returns pods as the API server sends them (spec, managed fields,
// annotations, every status field), in the states WaitRunning tells apart.
func fullPods(t *testing.T) map[string]*corev1.Pod {
	t.Helper()
	objs, err := Build(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	base := func(phase corev1.PodPhase, mutate func(*corev1.PodStatus)) *corev1.Pod {
		p := objs.Pod.DeepCopy()
		p.UID, p.ResourceVersion, p.Generation = types.UID("uid-1"), "42", 1
		p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "tether", Operation: metav1.ManagedFieldsOperationUpdate}}
		p.Status = corev1.PodStatus{Phase: phase, HostIP: "10.0.0.1", PodIP: "10.244.0.5", QOSClass: corev1.PodQOSBurstable,
			StartTime: &metav1.Time{Time: time.Unix(1700000000, 0)},
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.Time{Time: time.Unix(1700000000, 0)}}}}
		if mutate != nil {
			mutate(&p.Status)
		}
		return p
	}
	waiting := func(reason string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "details of " + reason}}
	}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Time{Time: time.Unix(1700000001, 0)}}}
	terminated := func(code int32, reason string) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: "it ended"}}
	}
	deleting := base(corev1.PodPending, nil)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1700000002, 0)}
	return map[string]*corev1.Pod{
		"pending": base(corev1.PodPending, nil),
		"unschedulable": base(corev1.PodPending, func(s *corev1.PodStatus) {
			s.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: insufficient cpu"}}
		}),
		"init copying": base(corev1.PodPending, func(s *corev1.PodStatus) {
			s.InitContainerStatuses = []corev1.ContainerStatus{fullStatus(InitContainer, running)}
			s.ContainerStatuses = []corev1.ContainerStatus{fullStatus(BuildContainer, waiting("PodInitializing"))}
		}),
		"init failed": base(corev1.PodPending, func(s *corev1.PodStatus) {
			s.InitContainerStatuses = []corev1.ContainerStatus{fullStatus(InitContainer, terminated(127, "Error"))}
		}),
		"image pull": base(corev1.PodPending, func(s *corev1.PodStatus) {
			s.ContainerStatuses = []corev1.ContainerStatus{fullStatus(BuildContainer, waiting("ErrImagePull"))}
		}),
		"init image pull": base(corev1.PodPending, func(s *corev1.PodStatus) {
			s.InitContainerStatuses = []corev1.ContainerStatus{fullStatus(InitContainer, waiting("ImagePullBackOff"))}
		}),
		"config error": base(corev1.PodPending, func(s *corev1.PodStatus) {
			s.ContainerStatuses = []corev1.ContainerStatus{fullStatus(BuildContainer, waiting("CreateContainerConfigError"))}
		}),
		"running": base(corev1.PodRunning, func(s *corev1.PodStatus) {
			s.InitContainerStatuses = []corev1.ContainerStatus{fullStatus(InitContainer, terminated(0, "Completed"))}
			s.ContainerStatuses = []corev1.ContainerStatus{fullStatus(BuildContainer, running)}
		}),
		"running, build not yet": base(corev1.PodRunning, func(s *corev1.PodStatus) {
			s.ContainerStatuses = []corev1.ContainerStatus{fullStatus(BuildContainer, waiting("ContainerCreating")), fullStatus("svc-0-redis", running)}
		}),
		"succeeded": base(corev1.PodSucceeded, func(s *corev1.PodStatus) {
			s.ContainerStatuses = []corev1.ContainerStatus{fullStatus(BuildContainer, terminated(0, "Completed"))}
		}),
		"failed": base(corev1.PodFailed, func(s *corev1.PodStatus) {
			s.Reason, s.Message = "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"
			s.ContainerStatuses = []corev1.ContainerStatus{fullStatus(BuildContainer, terminated(137, "OOMKilled"))}
		}),
		"deleting": deleting,
	}
}

// The pod cache's slim copies decide every wait as the full pods do: the
// same outcome, the same error, the same log, at once and after the
// timeouts of lingering problems. A field WaitRunning reads that slimPod
// drops makes this fail.
func TestSlimPodKeepsWhatWaitRunningReads(t *testing.T) {
	t0 := time.Now()
	for name, full := range fullPods(t) {
		t.Run(name, func(t *testing.T) {
			slim, err := slimPodTransform(full.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			sp := slim.(*corev1.Pod)
			if sp.Name != full.Name || sp.Namespace != full.Namespace || sp.UID != full.UID || sp.ResourceVersion != full.ResourceVersion {
				t.Errorf("identity %s/%s %s rv %s, want %s/%s %s rv %s", sp.Namespace, sp.Name, sp.UID, sp.ResourceVersion,
					full.Namespace, full.Name, full.UID, full.ResourceVersion)
			}
			if len(sp.Spec.Containers) != 0 || len(sp.ManagedFields) != 0 || len(sp.Annotations) != 0 {
				t.Errorf("slim pod keeps its spec, managed fields or annotations")
			}
			if got, want := decide(sp, t0), decide(full, t0); got != want {
				t.Errorf("slim pod decides\n%s\nthe full pod\n%s", got, want)
			}
			if got, want := containerSummary(sp), containerSummary(full); got != want {
				t.Errorf("container summary %q, want %q", got, want)
			}
		})
	}
	if obj, _ := slimPodTransform("not a pod"); obj != "not a pod" {
		t.Errorf("transform of another object: %v", obj)
	}
}

// decide runs a waiter over p at t0 and after each lingering limit, and
// returns what it decided and logged.
func decide(p *corev1.Pod, t0 time.Time) string {
	var log bytes.Buffer
	w := newWaiter()
	w.pod.Logger = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{ReplaceAttr: dropTime}))
	var b bytes.Buffer
	for _, at := range []time.Duration{0, DefaultConfigErrorTimeout, DefaultScheduleTimeout} {
		done, err := w.assess(p, t0.Add(at))
		fmt.Fprintf(&b, "+%s: done %v err %v\n", at, done, err)
	}
	return b.String() + log.String()
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// fullEvents returns events as the API server sends them.
func fullEvents() []*corev1.Event {
	ev := func(typ, reason, path, msg string) *corev1.Event {
		return &corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: "p.1", Namespace: "ci", UID: "ev-uid", ResourceVersion: "7",
				CreationTimestamp: metav1.Time{Time: time.Unix(1700000000, 0)},
				ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ci", Name: "p", UID: "uid-1",
				APIVersion: "v1", ResourceVersion: "41", FieldPath: path},
			Type: typ, Reason: reason, Message: msg,
			Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
			FirstTimestamp: metav1.Time{Time: time.Unix(1700000000, 0)}, LastTimestamp: metav1.Time{Time: time.Unix(1700000005, 0)},
			Count: 3, ReportingController: "kubelet", ReportingInstance: "node-1",
		}
	}
	return []*corev1.Event{
		ev(corev1.EventTypeNormal, "Scheduled", "", "Successfully assigned ci/p to node-1"),
		ev(corev1.EventTypeNormal, "Pulling", "spec.containers{"+BuildContainer+"}", `Pulling image "x"`),
		ev(corev1.EventTypeWarning, "Failed", "spec.containers{"+BuildContainer+"}", "Error: ErrImagePull"),
		ev(corev1.EventTypeWarning, "Failed", "spec.initContainers{"+InitContainer+"}", "Error: ImagePullBackOff"),
		ev(corev1.EventTypeNormal, "Started", "spec.initContainers{"+InitContainer+"}", "Started container"),
		ev(corev1.EventTypeNormal, "Started", "spec.containers{"+BuildContainer+"}", "Started container"),
	}
}

// The event feed's slim copies are logged and decide the wait as the full
// events do, reach the same subscriber, and count as recent alike.
func TestSlimEventKeepsWhatWaitRunningReads(t *testing.T) {
	now := time.Unix(1700000060, 0)
	for _, full := range fullEvents() {
		slim := slimEvent(full)
		if len(slim.ManagedFields) != 0 || slim.Source.Host != "" {
			t.Errorf("slim event keeps managed fields or its source")
		}
		if got, want := seeEvent(slim), seeEvent(full); got != want {
			t.Errorf("%s %s: slim event gives\n%s\nthe full event\n%s", full.Reason, full.InvolvedObject.FieldPath, got, want)
		}
		if slim.InvolvedObject.Name != full.InvolvedObject.Name || slim.InvolvedObject.UID != full.InvolvedObject.UID {
			t.Errorf("slim event is about %s (%s), want %s (%s)", slim.InvolvedObject.Name, slim.InvolvedObject.UID,
				full.InvolvedObject.Name, full.InvolvedObject.UID)
		}
		if !eventTime(slim).Time.Equal(eventTime(full).Time) || isRecent(slim, now) != isRecent(full, now) {
			t.Errorf("slim event's time %v, want %v", eventTime(slim), eventTime(full))
		}
	}
}

// seeEvent returns what an eventLog logs and decides for e.
func seeEvent(e *corev1.Event) string {
	var log bytes.Buffer
	l := &eventLog{pod: &Pod{Namespace: "ci", Name: "p", Container: BuildContainer,
		Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{ReplaceAttr: dropTime}))}, seen: map[string]bool{}}
	started, err := l.see(e)
	again, _ := l.see(e)
	return fmt.Sprintf("started %v err %v repeat-started %v\n%s", started, err, again, log.String())
}
