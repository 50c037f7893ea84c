package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube/kubeapi"
	"github.com/tether-ci/tether/internal/random"
)

// ClaimRequest asks for a warm pod of a pool for one job.
type ClaimRequest struct {
	// Pool is the pool's name. Required.
	Pool string
	// Spec is the job's spec, as for a cold Build: its pod-shaping
	// settings must hash like the pool's (PoolHash); its job data
	// (Scripts, After, Env, MaskEnv) travels over the attach stream as the
	// returned Pod's Job; its Timeout, DeadlineMargin, TTL, Labels and
	// Annotations are set on the pod at the claim. Spec.Name is unused
	// (the pod has its own name); Spec.JobID becomes the pod's LabelJob
	// ("" picks one).
	Spec Spec
	// Owner, when set, is added to the pod's ownerReferences at the claim
	// (the Actions runner's pod, say), so the garbage collector deletes
	// the pod with it.
	Owner *metav1.OwnerReference
	// Logger receives the claim's progress at debug level; nil discards it.
	Logger *slog.Logger
	// Connect, when set, says the caller runs the job from this process at
	// once, and Claim overlaps the job's start with the claim: it opens
	// the attach session to a pod while the update that claims it is under
	// way (no byte goes over it before the update succeeded; a session to
	// a pod another job claimed first is closed), and the first Connect of
	// the returned Pod's first Transport takes that session. The pod's
	// PodDisruptionBudget is then created in the background once that
	// session carried the job's first output (or any record past the
	// shim's answers and a script's begin), at most a second after the claim,
	// so that its request is not in the way of the job's start
	// (Pod.Protected waits for it; Pod.Delete does). Nil: Claim
	// returns once the pod is claimed and protected, for a caller that
	// attaches later or in another process.
	Connect *ClaimConnect
}

// MissReason says why Claim found no warm pod.
type MissReason string

// Why Claim found no warm pod.
const (
	// MissEmpty: the pool has no idle pod (empty, or all claimed or
	// starting).
	MissEmpty MissReason = "empty"
	// MissSettings: the pool has idle pods, none with the job's settings
	// (the settings hash differs).
	MissSettings MissReason = "settings"
	// MissRace: every matching pod was claimed by another job first.
	MissRace MissReason = "race"
	// MissAPI: the API server refused the list or an update (RBAC, say).
	MissAPI MissReason = "api"
)

// ErrNoWarmPod is wrapped by the error Claim returns when it claimed no
// pod: the caller starts the job on a cold pod at once.
var ErrNoWarmPod = errors.New("no warm pod claimed")

// MissError is Claim's error when it claimed no pod. It wraps ErrNoWarmPod
// (and the API error for MissAPI).
type MissError struct {
	// Pool is the pool asked for.
	Pool string
	// Reason says why no pod was claimed.
	Reason MissReason
	// Err is the API error (MissAPI) or nil.
	Err error
}

func (e *MissError) Error() string {
	msg := fmt.Sprintf("pool %s: %s (%s)", e.Pool, ErrNoWarmPod, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns ErrNoWarmPod and the API error.
func (e *MissError) Unwrap() []error { return []error{ErrNoWarmPod, e.Err} }

// Claim takes one warm pod of req.Pool for the job of req.Spec, without
// waiting: one list of the pool's idle pods (a label selector, no informer
// to sync), then an update of one Running pod whose settings hash equals
// PoolHash(req.Spec). The update carries the pod's resourceVersion, so of
// several claimers of one pod exactly one succeeds; a claimer that gets a
// Conflict tries the next pod. The update sets LabelWarm=WarmClaimed, the
// job's LabelJob, AnnotationClaimedAt, the job's labels and annotations,
// Owner, the TTL annotation (the job's TTL counted from now, expressed
// from the pod's creation) and activeDeadlineSeconds (the job's Timeout
// plus DeadlineMargin, counted from now); unless
// Spec.NoDisruptionProtection it also sets ProtectionAnnotations, and once
// the pod is the job's, Protect gives it its PodDisruptionBudget (a warm
// pod is evictable while idle; a claimed one is protected as a cold one;
// a budget that cannot be made is a warning in the Logger, as for a cold
// pod). With req.Connect the attach session overlaps the claim, and the
// budget's create follows the job's start (see ClaimRequest.Connect).
//
// The returned Pod's Job carries the job's data for the attach stream: its
// scripts as Files (in FilesDir), its variables as an EnvFile, the values
// of MaskEnv as Mask, and the job's deadline and TTL for the shim. Run it
// with client.Run on Pod.Transport, then Delete the pod as for a cold one.
//
// When no pod was claimed the error is a *MissError wrapping ErrNoWarmPod:
// start the job cold (Build, Create). The miss is recorded as an Event in
// the job's namespace (MissEvent; best effort, needs create on events),
// which `tether pool status` and the pools' controller count. A spec Build would refuse is an
// error that does not wrap ErrNoWarmPod.
func Claim(ctx context.Context, cs kubeapi.Interface, req ClaimRequest) (claimed *Pod, err error) {
	log := req.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := checkPoolName(req.Pool); err != nil {
		return nil, err
	}
	if req.Connect != nil && req.Connect.Config == nil {
		return nil, errors.New("kube: ClaimRequest.Connect needs a Config to attach with")
	}
	if req.Spec.Namespace == "" {
		_, err := req.Spec.withDefaults()
		return nil, err // the namespace is required
	}
	// The list goes out first; the spec's defaults (the pod's random
	// name), the hash (a Build of the pod), the job and the attach's
	// connection (predial.go, its TLS settings read again) are made while
	// it is under way. A spec that proves invalid cancels it.
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	listed := make(chan idleList, 1)
	go func() {
		sel := labels.SelectorFromSet(labels.Set{LabelPool: req.Pool, LabelWarm: WarmIdle}).String()
		list, err := cs.CoreV1().Pods(req.Spec.Namespace).List(lctx, metav1.ListOptions{LabelSelector: sel})
		listed <- idleList{list, err}
	}()
	s, err := req.Spec.withDefaults()
	if err != nil {
		return nil, err
	}
	var pd *predial
	if req.Connect != nil {
		pd = startPredial(ctx, req.Connect.Config)
		defer func() {
			if claimed == nil {
				pd.release()
			}
		}()
	}
	hash, err := PoolHash(req.Spec)
	if err != nil {
		return nil, err
	}
	job, err := warmJob(s)
	if err != nil {
		return nil, err
	}
	miss := func(r MissReason, err error) (*Pod, error) {
		m := &MissError{Pool: req.Pool, Reason: r, Err: err}
		log.Debug("no warm pod: cold start", "pool", req.Pool, "reason", string(r), "err", err)
		RecordMiss(ctx, cs, s.Namespace, m, log)
		return nil, m
	}
	l := <-listed
	list, err := l.list, l.err
	if err != nil {
		return miss(MissAPI, fmt.Errorf("list the pool's pods: %w", err))
	}
	var candidates []*corev1.Pod
	idle := 0
	for i := range list.Items {
		pod := &list.Items[i]
		if !claimable(pod) {
			continue
		}
		idle++
		if pod.Labels[LabelPoolHash] == hash {
			candidates = append(candidates, pod)
		}
	}
	switch {
	case idle == 0:
		return miss(MissEmpty, nil)
	case len(candidates) == 0:
		return miss(MissSettings, fmt.Errorf("%d idle pods, none with the job's settings hash %s", idle, hash))
	}
	// Concurrent claimers start at different pods, so most of them win
	// their first update.
	rand.Shuffle(len(candidates), func(i, j int) { candidates[i], candidates[j] = candidates[j], candidates[i] })
	for _, pod := range candidates {
		up := claimedPod(pod, s, req.Owner, time.Now())
		pending := req.attach(ctx, cs, pod, pd)
		got, err := cs.CoreV1().Pods(pod.Namespace).Update(ctx, up, metav1.UpdateOptions{})
		switch {
		case err == nil:
			log.Debug("claimed a warm pod", "pool", req.Pool, "pod", got.Namespace+"/"+got.Name, "job", s.JobID)
			p := &Pod{Client: cs, Namespace: got.Namespace, Name: got.Name, uid: got.UID,
				Container: BuildContainer, Job: job, Logger: req.Logger, job: s.JobID, attaching: pending}
			p.started.Store(true)
			if pending != nil {
				pd.releaseAfter(pending.done) // unless its attach took it
			}
			switch {
			case s.NoDisruptionProtection:
			case req.Connect != nil:
				var started <-chan struct{}
				if pending != nil {
					started = pending.started
				}
				p.protecting = startProtect(ctx, cs, got, started, log)
			default:
				if err := Protect(ctx, cs, got); err != nil {
					ProtectionWarning(log, got, err)
				}
			}
			return p, nil
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			pending.abandon()
			log.Debug("another job claimed the warm pod first", "pod", pod.Name, "err", err)
		default:
			pending.abandon()
			return miss(MissAPI, fmt.Errorf("claim pod %s/%s: %w%s", pod.Namespace, pod.Name, err, hint(err)))
		}
	}
	return miss(MissRace, nil)
}

// idleList is the answer to Claim's list of a pool's idle pods.
type idleList struct {
	list *corev1.PodList
	err  error
}

// attach opens the attach session to pod for req.Connect in the
// background; nil without req.Connect.
func (req *ClaimRequest) attach(ctx context.Context, cs kubeapi.Interface, pod *corev1.Pod, pd *predial) *pendingAttach {
	if req.Connect == nil {
		return nil
	}
	t := &Transport{Config: req.Connect.Config, Client: cs, Namespace: pod.Namespace, Pod: pod.Name,
		Container: BuildContainer, Options: req.Connect.Options, predialed: pd}
	return startAttach(ctx, t, cs)
}

// claimable reports whether pod can serve a job: Running, not being
// deleted, its build container running.
func claimable(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
		return false
	}
	st, ok := containerStatus(pod, BuildContainer)
	return ok && st.State.Running != nil
}

// claimedPod returns pod as the claim updates it for the job of s (see
// Claim).
func claimedPod(pod *corev1.Pod, s Spec, owner *metav1.OwnerReference, now time.Time) *corev1.Pod {
	up := pod.DeepCopy()
	if up.Labels == nil {
		up.Labels = map[string]string{}
	}
	if up.Annotations == nil {
		up.Annotations = map[string]string{}
	}
	for k, v := range s.Labels {
		if _, own := up.Labels[k]; !own {
			up.Labels[k] = v
		}
	}
	for k, v := range s.Annotations {
		if _, own := up.Annotations[k]; !own {
			up.Annotations[k] = v
		}
	}
	if !s.NoDisruptionProtection {
		for k, v := range ProtectionAnnotations() {
			up.Annotations[k] = v
		}
	}
	up.Labels[LabelWarm] = WarmClaimed
	up.Labels[LabelJob] = s.JobID
	up.Annotations[AnnotationClaimedAt] = now.UTC().Format(time.RFC3339Nano)
	age := max(now.Sub(pod.CreationTimestamp.Time), 0)
	up.Annotations[AnnotationTTL] = strconv.FormatInt(seconds(age+s.TTL), 10)
	if owner != nil {
		up.OwnerReferences = append(up.OwnerReferences, *owner)
	}
	if s.Timeout > 0 {
		started := pod.CreationTimestamp.Time
		if pod.Status.StartTime != nil {
			started = pod.Status.StartTime.Time
		}
		ads := seconds(max(now.Sub(started), 0) + s.Timeout + s.DeadlineMargin)
		if cur := up.Spec.ActiveDeadlineSeconds; cur == nil || *cur > ads {
			up.Spec.ActiveDeadlineSeconds = &ads
		}
	}
	return up
}

// warmJob returns the job of s (withDefaults applied) for a warm pod: its
// data as files over the stream.
func warmJob(s Spec) (client.Job, error) {
	job := client.Job{ID: s.JobID, Deadline: s.Timeout, TTL: s.TTL, AfterTimeout: s.AfterTimeout}
	add := func(i int, sc Script) string {
		p := FilesDir + "/" + scriptKey(i, sc.Name)
		job.Files = append(job.Files, client.File{Path: p, Content: sc.Content, Mode: 0o700})
		return p
	}
	for i, sc := range s.Scripts {
		job.Scripts = append(job.Scripts, add(i, sc))
	}
	for i, sc := range s.After {
		job.After = append(job.After, add(len(s.Scripts)+i, sc))
	}
	if err := job.AddEnvFile(FilesDir+"/.env-"+random.Hex(8), s.Env); err != nil {
		return job, fmt.Errorf("kube: the job's variables: %w", err)
	}
	for _, name := range s.MaskEnv {
		job.Mask = append(job.Mask, s.Env[name])
	}
	return job, nil
}
