package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube/kubeapi"
)

// cleanupTimeout bounds the deletes Create does after a failure.
const cleanupTimeout = 30 * time.Second

// Pod is a job's pod as created: the handle to wait for it, attach to it
// and delete it.
type Pod struct {
	// Client is the clientset the pod was created with.
	Client kubeapi.Interface
	// Namespace and Name identify the pod (with its UID, see UID).
	Namespace, Name string
	// Container is the container the shim runs in ("" means BuildContainer).
	Container string
	// Job is the job to send to the shim.
	Job client.Job
	// Logger receives progress (pod events, phase changes); nil discards it.
	Logger *slog.Logger
	// Watcher follows the pod for WaitRunning; a runner sets one Watcher
	// (kept for its life) on all its pods so their jobs share watches.
	// Nil: WaitRunning uses a Watcher of its own for the one call.
	Watcher *Watcher
	// DeleteGrace is the grace period Delete asks for (whole seconds,
	// rounded up): how long the kubelet waits between SIGTERM and SIGKILL
	// for the pod's containers. 0 leaves it to the pod's own
	// terminationGracePeriodSeconds (Spec.TerminationGracePeriod).
	DeleteGrace time.Duration

	// imageObjs are the objects Create made the pod from when its shim
	// comes from an image volume and a Fallback exists: WaitRunning
	// replaces the pod with the Fallback when the container runtime
	// cannot mount the volume (see shim_fallback.go).
	imageObjs *Objects
	// uid is the pod's UID ("" unknown: Delete then deletes the pod of its
	// name, see DeleteByName).
	uid types.UID
	// mu guards uid, created, deleting and replacing, which WaitRunning
	// changes when it replaces the pod and Delete reads from any goroutine
	// (a signal handler's).
	mu sync.Mutex
	// created is when the pod's create was sent (zero: not by Create).
	created time.Time
	// deleting is set by Delete: no replacement is created after it.
	deleting bool
	// replacing is open while the create of a replacement is under way
	// (nil otherwise); closed once its outcome is in uid.
	replacing chan struct{}
	// job is the LabelJob value of the pod as created ("" unknown): a pod
	// of the same name carrying it is this job's (see Delete).
	job string
	// started is set when WaitRunning saw the shim's container start.
	started atomic.Bool
	// attaching is the attach session Claim opened to the pod while it
	// claimed it (ClaimRequest.Connect), until a Transport takes it; nil
	// otherwise. Guarded by mu.
	attaching *pendingAttach
	// protecting is the budget's create Claim started in the background
	// (ClaimRequest.Connect); nil otherwise. Guarded by mu.
	protecting *protection
}

// PodOf is the handle of the existing pod obj (read from the API server):
// its namespace, name and UID. Set the other fields as needed.
func PodOf(cs kubeapi.Interface, obj *corev1.Pod) *Pod {
	return &Pod{Client: cs, Namespace: obj.Namespace, Name: obj.Name, uid: obj.UID}
}

// createdAt returns when the pod's create was sent (zero: unknown).
func (p *Pod) createdAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.created
}

// UID returns the pod's UID: the created pod's, or its replacement's
// once WaitRunning replaced it; "" for a Pod made by its name alone.
func (p *Pod) UID() types.UID {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.uid
}

func (p *Pod) container() string {
	if p.Container == "" {
		return BuildContainer
	}
	return p.Container
}

func (p *Pod) logger() *slog.Logger {
	if p.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Logger
}

// Create creates objs: the pod first, then the ConfigMap and the Secret
// with an ownerReference to it, so they never exist without an owner and a
// crash at any point leaves nothing the garbage collector would not remove.
// (The pod's volumes may name objects that do not exist yet: the kubelet
// waits for them.) When creating the pod fails (a ResourceQuota rejects
// it, say) nothing was created; when creating an owned object fails, Create
// deletes the pod before it returns the error.
func Create(ctx context.Context, cs kubeapi.Interface, objs *Objects, log *slog.Logger) (*Pod, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	want, err := podToCreate(ctx, cs, objs, log)
	if err != nil {
		return nil, err
	}
	p, err := createOwned(ctx, cs, want, objs, log, false)
	if err != nil {
		return nil, err
	}
	if want == objs.Pod && objs.Fallback != nil {
		p.imageObjs = objs
	}
	return p, nil
}

// createOwned creates pod, then objs' ConfigMap and Secret owned by it
// (see Create). With replacing, a ConfigMap or Secret that already exists
// is taken for the copy of a pod of the same name that was just deleted,
// which the garbage collector is removing: its create is tried again until
// it is gone (up to cleanupTimeout).
func createOwned(ctx context.Context, cs kubeapi.Interface, want *corev1.Pod, objs *Objects, log *slog.Logger, replacing bool) (*Pod, error) {
	sent := time.Now()
	pod, err := cs.CoreV1().Pods(want.Namespace).Create(ctx, want, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create pod %s/%s: %w%s", want.Namespace, want.Name, err, hint(err))
	}
	p := &Pod{Client: cs, Namespace: pod.Namespace, Name: pod.Name, uid: pod.UID,
		Container: BuildContainer, Job: objs.Job, Logger: log, created: sent, job: pod.Labels[LabelJob]}
	log.Info("pod created", "pod", pod.Namespace+"/"+pod.Name)

	fail := func(what string, err error) (*Pod, error) {
		err = fmt.Errorf("create %s for pod %s/%s: %w%s", what, p.Namespace, p.Name, err, hint(err))
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if derr := p.Delete(dctx); derr != nil {
			return nil, errors.Join(err, fmt.Errorf("and deleting the pod failed too (its ConfigMap and Secret go with it once it is deleted): %w", derr))
		}
		return nil, err
	}
	create := func(create func() error) error {
		if !replacing {
			return create()
		}
		deadline := time.Now().Add(cleanupTimeout)
		for {
			err := create()
			if !apierrors.IsAlreadyExists(err) || time.Now().After(deadline) {
				return err
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w (waiting for the replaced pod's copy to be garbage-collected)", err)
			case <-time.After(replacePoll):
			}
		}
	}
	if objs.ConfigMap != nil {
		cm := objs.ConfigMap.DeepCopy()
		ownedBy(&cm.ObjectMeta, pod.Name, pod.UID)
		if err := create(func() error {
			_, err := cs.CoreV1().ConfigMaps(p.Namespace).Create(ctx, cm, metav1.CreateOptions{})
			return err
		}); err != nil {
			return fail("ConfigMap "+cm.Name, err)
		}
	}
	if objs.Secret != nil {
		sec := objs.Secret.DeepCopy()
		ownedBy(&sec.ObjectMeta, pod.Name, pod.UID)
		if err := create(func() error {
			_, err := cs.CoreV1().Secrets(p.Namespace).Create(ctx, sec, metav1.CreateOptions{})
			return err
		}); err != nil {
			return fail("Secret "+sec.Name, err)
		}
	}
	if objs.Protect {
		if err := create(func() error { return Protect(ctx, cs, pod) }); err != nil {
			ProtectionWarning(log, pod, err)
		}
	}
	return p, nil
}

// podToCreate returns objs.Pod, or objs.Fallback when the API server drops
// the image volume that carries the shim to objs.Pod (the ImageVolume
// feature off, or a Kubernetes older than 1.31): it keeps the pod and
// silently drops the volume and its mounts, and the build container could
// never start. A dry run of the create shows what the server would store.
func podToCreate(ctx context.Context, cs kubeapi.Interface, objs *Objects, log *slog.Logger) (*corev1.Pod, error) {
	if objs.Fallback == nil {
		return objs.Pod, nil
	}
	if _, ok := shimImage(objs.Pod); !ok {
		return objs.Pod, nil
	}
	dry, err := cs.CoreV1().Pods(objs.Pod.Namespace).Create(ctx, objs.Pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return nil, fmt.Errorf("create pod %s/%s (dry run): %w%s", objs.Pod.Namespace, objs.Pod.Name, err, hint(err))
	}
	if _, ok := shimImage(dry); ok {
		return objs.Pod, nil
	}
	log.Info("the API server drops image volumes (Kubernetes before 1.35 without the ImageVolume feature gate, or before 1.31): an init container copies the shim instead",
		"pod", objs.Pod.Namespace+"/"+objs.Pod.Name)
	return objs.Fallback, nil
}

// hint adds advice for common API errors.
func hint(err error) string {
	switch {
	case podSecurityRejected(err):
		return podSecurityHint
	case apierrors.IsForbidden(err) && (strings.Contains(err.Error(), "exceeded quota") || strings.Contains(err.Error(), "failed quota")):
		return " (a ResourceQuota of the namespace refused it: see `kubectl describe quota`)"
	case apierrors.IsForbidden(err):
		return " (a missing RBAC permission: check the Role bound to this identity)"
	case apierrors.IsAlreadyExists(err):
		return " (a name collision: run again)"
	case apierrors.IsInvalid(err):
		return " (the object was rejected as invalid)"
	}
	return ""
}

// Transport returns the attach transport of the pod's build container.
// With p.Watcher set, it shares what the Watcher learnt about the API
// server (whether a container log can be read by stream). After
// WaitRunning succeeded, its first Connect attaches without reading the
// pod first (the container was just seen to start). After a Claim with
// ClaimRequest.Connect, the first Transport's first Connect takes the
// attach session Claim opened (and reads the pod only when that failed).
func (p *Pod) Transport(cfg *rest.Config, opts TransportOptions) *Transport {
	t := &Transport{Config: cfg, Client: p.Client, Namespace: p.Namespace, Pod: p.Name,
		Container: p.container(), Options: opts}
	if p.Watcher != nil {
		t.logStreams = &p.Watcher.logStreams
	}
	t.started.Store(p.started.Load())
	t.pending.Store(p.takeAttach())
	return t
}

// Get returns the pod's current state.
func (p *Pod) Get(ctx context.Context) (*corev1.Pod, error) {
	pod, err := p.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return pod, nil
}
