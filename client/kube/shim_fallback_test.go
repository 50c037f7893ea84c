package kube

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	ktesting "k8s.io/client-go/testing"

	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
)

// containerd16Message is what containerd 1.6 to 2.0 answer the kubelet's
// request to create a container with an image mount: the mount has no host
// path, and creating that path fails. The kubelet reports it as the
// container's waiting message, with reason CreateContainerError.
const containerd16Message = `failed to generate container "5e1c0a2b" spec: failed to mkdir "": mkdir : no such file or directory`

// crioMessage is what CRI-O before 1.31 answers the kubelet's request to
// create a container with an image mount: it does not know the mount's
// image field and finds a bind mount without a host path. The kubelet
// reports it as the container's waiting message, with reason
// CreateContainerError.
const crioMessage = "mount.HostPath is empty"

func waitingStatus(name, reason, msg string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
}

func TestImageVolumeFailure(t *testing.T) {
	objs, err := Build(imageSpec())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		status corev1.PodStatus
		want   string // the container named, "" for none
	}{
		{"containerd 1.6", corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			waitingStatus(BuildContainer, "CreateContainerError", containerd16Message)}}, BuildContainer},
		{"helper sidecar first", corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{
			waitingStatus(HelperContainer, "CreateContainerError", containerd16Message)}}, HelperContainer},
		{"CRI-O before 1.31", corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			waitingStatus(BuildContainer, "CreateContainerError", crioMessage)}}, BuildContainer},
		{"CRI-O, helper sidecar first", corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{
			waitingStatus(HelperContainer, "CreateContainerError", crioMessage)}}, HelperContainer},
		{"CRI-O, a container without the volume", corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{
			waitingStatus("svc-0-db", "CreateContainerError", crioMessage)}}, ""},
		{"CRI-O, another reason", corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			waitingStatus(BuildContainer, "RunContainerError", crioMessage)}}, ""},
		{"containerd 2.2 cannot mount it", corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			waitingStatus(BuildContainer, "CreateContainerError", "failed to mount image volume: ImageVolumeMountFailed: failed to resolve image \"helper\": not found")}}, BuildContainer},
		{"containerd 2.1 cannot mount it", corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			waitingStatus(BuildContainer, "CreateContainerError", "failed to mount image volume: failed to resolve image \"helper\": not found")}}, BuildContainer},
		{"CRI-O 1.31 cannot mount it", corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			waitingStatus(BuildContainer, "CreateContainerError", "mount image: image \"registry.example/helper:1\" does not exist locally")}}, BuildContainer},
		{"mount failed", corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			waitingStatus(BuildContainer, "CreateContainerError", "ImageVolumeMountFailed: failed to mount image volume")}}, BuildContainer},
		{"another create error", corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			waitingStatus(BuildContainer, "CreateContainerError", `failed to create containerd container: no space left on device`)}}, ""},
		{"another reason", corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			waitingStatus(BuildContainer, "CreateContainerConfigError", containerd16Message)}}, ""},
		{"a container without the volume", corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{
			waitingStatus("svc-0-db", "CreateContainerError", containerd16Message)}}, ""},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ci", Name: "p"}, Status: tc.status}
		got := imageVolumeFailure(objs.Pod, pod)
		switch {
		case tc.want == "" && got != nil:
			t.Errorf("%s: %v; want none", tc.name, got)
		case tc.want != "" && (got == nil || got.container != tc.want):
			t.Errorf("%s: %v; want container %s", tc.name, got, tc.want)
		}
	}
}

// fakeKubelet plays the kubelet and the garbage collector for a fake
// cluster whose API server keeps image volumes on a node whose runtime has
// none: the containers of a pod with the shim's image volume wait with
// containerd 1.6's CreateContainerError, a pod without one runs. Deleting
// a pod removes the objects it owns a little later, as the garbage
// collector does. Every created object gets a new UID.
func fakeKubelet(ctx context.Context) (*fake.Clientset, *sync.WaitGroup, func() []string) {
	cs := fake.NewClientset()
	var n atomic.Int32
	cs.PrependReactor("create", "*", func(a ktesting.Action) (bool, runtime.Object, error) {
		if obj, ok := a.(ktesting.CreateAction).GetObject().(metav1.Object); ok {
			obj.SetUID(types.UID(fmt.Sprintf("uid-%d", n.Add(1))))
		}
		return false, nil, nil
	})
	serveDryRuns(cs, false)
	watches := trackWatches(cs)
	var gc sync.WaitGroup
	var mu sync.Mutex
	var graces []string
	cs.PrependReactor("delete", "pods", func(a ktesting.Action) (bool, runtime.Object, error) {
		d := a.(ktesting.DeleteActionImpl)
		mu.Lock()
		if g := d.DeleteOptions.GracePeriodSeconds; g != nil {
			graces = append(graces, fmt.Sprint(*g))
		} else {
			graces = append(graces, "default")
		}
		mu.Unlock()
		uid := *d.DeleteOptions.Preconditions.UID
		gc.Add(1)
		go func() { // the reactor holds the fake's lock
			defer gc.Done()
			time.Sleep(600 * time.Millisecond)
			cms, _ := cs.CoreV1().ConfigMaps("ci").List(ctx, metav1.ListOptions{})
			for _, cm := range cms.Items {
				if len(cm.OwnerReferences) == 1 && cm.OwnerReferences[0].UID == uid {
					_ = cs.CoreV1().ConfigMaps("ci").Delete(ctx, cm.Name, metav1.DeleteOptions{})
				}
			}
			pdbs, _ := cs.PolicyV1().PodDisruptionBudgets("ci").List(ctx, metav1.ListOptions{})
			for _, b := range pdbs.Items {
				if len(b.OwnerReferences) == 1 && b.OwnerReferences[0].UID == uid {
					_ = cs.PolicyV1().PodDisruptionBudgets("ci").Delete(ctx, b.Name, metav1.DeleteOptions{})
				}
			}
			secs, _ := cs.CoreV1().Secrets("ci").List(ctx, metav1.ListOptions{})
			for _, s := range secs.Items {
				if len(s.OwnerReferences) == 1 && s.OwnerReferences[0].UID == uid {
					_ = cs.CoreV1().Secrets("ci").Delete(ctx, s.Name, metav1.DeleteOptions{})
				}
			}
		}()
		return false, nil, nil
	})
	go func() {
		// A status the kubelet set before WaitRunning's pod watch was
		// registered would never reach it (see fakeWatches): the first
		// pod's waits for the first watch.
		if !watches.await(ctx, 1, "pods") {
			return
		}
		for ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
			pods, err := cs.CoreV1().Pods("ci").List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			for _, p := range pods.Items {
				// A Running status is sent again and again: the watch of
				// a Fallback pod may be registered after its first one.
				if p.Status.Phase != "" && p.Status.Phase != corev1.PodRunning {
					continue
				}
				if _, ok := shimImage(&p); ok {
					p.Status.Phase = corev1.PodPending
					p.Status.ContainerStatuses = []corev1.ContainerStatus{waitingStatus(BuildContainer, "CreateContainerError", containerd16Message)}
				} else {
					p.Status.Phase = corev1.PodRunning
					p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: BuildContainer,
						State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
				}
				_, _ = cs.CoreV1().Pods("ci").UpdateStatus(ctx, &p, metav1.UpdateOptions{})
			}
		}
	}()
	return cs, &gc, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), graces...)
	}
}

// An API server that keeps image volumes on a node whose runtime cannot
// mount them: WaitRunning deletes the pod, creates the Fallback under the
// same name (its ConfigMap and Secret again, owned by the new pod, once the
// garbage collector removed the old ones), says so once, and the job's pod
// runs.
func TestWaitRunningFallsBackWhenTheRuntimeLacksImageVolumes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, gc, graces := fakeKubelet(ctx)
	defer gc.Wait()
	spec := imageSpec()
	spec.Helper, spec.Services = nil, nil
	objs, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, nil))
	p, err := Create(ctx, clientset.Wrap(cs), objs, log)
	if err != nil {
		t.Fatal(err)
	}
	first := p.UID()
	if err := p.WaitRunning(ctx, WaitOptions{Timeout: 20 * time.Second}); err != nil {
		t.Fatalf("WaitRunning: %v", err)
	}
	got, err := cs.CoreV1().Pods("ci").Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.UID == first || p.UID() != got.UID {
		t.Fatalf("pod UID %s (first %s, Pod.UID %s); want a new pod, and Pod.UID its UID", got.UID, first, p.UID())
	}
	if _, ok := shimImage(got); ok || container(got.Spec.InitContainers, InitContainer) == nil {
		t.Fatalf("the pod now %+v; want the init container, no image volume", got.Spec)
	}
	cm, err := cs.CoreV1().ConfigMaps("ci").Get(ctx, objs.ConfigMap.Name, metav1.GetOptions{})
	if err != nil || len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != got.UID {
		t.Fatalf("ConfigMap %v (%v); want it owned by the new pod", cm, err)
	}
	sec, err := cs.CoreV1().Secrets("ci").Get(ctx, objs.Secret.Name, metav1.GetOptions{})
	if err != nil || len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].UID != got.UID {
		t.Fatalf("Secret %v (%v); want it owned by the new pod", sec, err)
	}
	if g := graces(); len(g) != 1 || g[0] != "0" {
		t.Fatalf("pod deletes with grace %v; want one, with 0 (the pod never ran)", g)
	}
	logMu.Lock()
	said := strings.Count(logs.String(), "cannot mount the shim's image volume")
	logMu.Unlock()
	if said != 1 {
		t.Fatalf("the fallback was said %d times; want once:\n%s", said, logs.String())
	}
	// Delete removes the new pod.
	if err := p.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("ci").Get(ctx, p.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the pod after Delete: %v", err)
	}
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
