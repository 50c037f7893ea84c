package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tether-ci/tether/internal/contract"
	"github.com/tether-ci/tether/internal/random"
)

// Labels and annotations of warm pods: pods of a pool, started before
// their jobs by the pool's controller (`tether pool serve`, which builds
// them with WarmPod) and claimed by one job each (Claim).
const (
	// LabelPool carries the pool's name.
	LabelPool = contract.LabelPool
	// LabelPoolHash carries PoolHash of the settings the pod was built
	// from.
	LabelPoolHash = contract.LabelPoolHash
	// LabelWarm is the warm pod's state: WarmStarting, WarmIdle or
	// WarmClaimed.
	LabelWarm = contract.LabelWarm
	// WarmStarting: the pod's shim has not answered yet.
	WarmStarting = contract.WarmStarting
	// WarmIdle: the pod runs, its shim answered; a job may claim it.
	WarmIdle = contract.WarmIdle
	// WarmClaimed: a job claimed the pod; it serves that job only.
	WarmClaimed = contract.WarmClaimed
	// AnnotationClaimedAt is when a job claimed the pod (RFC 3339, UTC).
	AnnotationClaimedAt = contract.AnnotationClaimedAt
)

// WarmTTLMargin is added to a warm pod's MaxIdle for its TTL annotation:
// a warm pod that ended itself (its shim's idle timeout) is deleted by the
// cleaner (`tether gc`) this long after.
const WarmTTLMargin = 5 * time.Minute

// WarmOptions say which pool a warm pod belongs to and how long it may
// wait for a job.
type WarmOptions struct {
	// Pool is the pool's name: a DNS label (lower-case letters, digits and
	// '-', at most 63 characters). Required.
	Pool string
	// MaxIdle is how long the pod waits for a job: its shim's idle timeout
	// (so a warm pod nobody claims or pings ends itself, controller or
	// not), and with WarmTTLMargin its TTL annotation. Required.
	MaxIdle time.Duration
}

// WarmPod returns the objects of one warm pod of a pool whose pods have
// spec's settings: a Spec.Serve pod (its jobs deliver their scripts,
// variables and files over the attach stream after Claim), labelled with
// the pool's name (LabelPool), PoolHash(spec) (LabelPoolHash) and
// LabelWarm=WarmStarting, whose shim ends itself after opts.MaxIdle
// without a client. The pod holds no job data: spec must have no Env,
// MaskEnv, Scripts or After, no Timeout (the claim sets the job's
// deadline), and no JobID; Spec.Name may be empty (a name is picked:
// "tether-warm-" plus the pool's name and a random suffix). Objects'
// ConfigMap and Secret are nil. The pod is not protected from voluntary
// disruption while idle (no PodDisruptionBudget, no do-not-evict
// annotations, Objects.Protect false): Claim protects it for its job.
func WarmPod(spec Spec, opts WarmOptions) (*Objects, error) {
	if err := checkPoolName(opts.Pool); err != nil {
		return nil, err
	}
	if opts.MaxIdle <= 0 {
		return nil, fmt.Errorf("kube: pool %s: MaxIdle must be positive: a warm pod must end itself when nobody claims it", opts.Pool)
	}
	var job []string
	if len(spec.Env) > 0 {
		job = append(job, "Env")
	}
	if len(spec.MaskEnv) > 0 {
		job = append(job, "MaskEnv")
	}
	if len(spec.Scripts)+len(spec.After) > 0 {
		job = append(job, "Scripts/After")
	}
	if spec.Timeout != 0 {
		job = append(job, "Timeout")
	}
	if spec.JobID != "" {
		job = append(job, "JobID")
	}
	if len(job) > 0 {
		return nil, fmt.Errorf("kube: pool %s: a warm pod holds no job data, but the spec sets %s: a job's data travels over the attach stream after its claim", opts.Pool, strings.Join(job, ", "))
	}
	hash, err := PoolHash(spec)
	if err != nil {
		return nil, err
	}
	s := spec
	s.Serve = true
	s.IdleTimeout = opts.MaxIdle
	s.TTL = opts.MaxIdle + WarmTTLMargin
	if s.Name == "" {
		s.Name = "tether-warm-" + opts.Pool + "-" + random.Hex(4)
	}
	s.Labels = cloneMap(s.Labels)
	s.Labels[LabelPool] = opts.Pool
	s.Labels[LabelPoolHash] = hash
	s.Labels[LabelWarm] = WarmStarting
	objs, err := Build(s)
	if err != nil {
		return nil, fmt.Errorf("kube: pool %s: %w", opts.Pool, err)
	}
	// Idle, a warm pod holds no job: a drain or an autoscaler may evict it
	// (the controller makes another). Claim protects it for its job.
	objs.Protect = false
	for _, p := range []*corev1.Pod{objs.Pod, objs.Fallback} {
		if p != nil {
			for k := range ProtectionAnnotations() {
				delete(p.Annotations, k)
			}
		}
	}
	return objs, nil
}

// checkPoolName says what is wrong with a pool's name.
func checkPoolName(name string) error {
	if name == "" {
		return errors.New("kube: the pool's name is required")
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("kube: pool name %q: %s", name, strings.Join(errs, "; "))
	}
	if len(name) > 40 {
		return fmt.Errorf("kube: pool name %q is longer than 40 characters (it is part of its pods' names)", name)
	}
	return nil
}

// PoolHash returns the hash of the settings that shape spec's pod and are
// not a job's own: a job's spec and a pool's spec hash equal exactly when
// a warm pod of the pool can serve the job (Claim compares them through
// LabelPoolHash). It covers everything Build puts into the pod's spec —
// images, pull policy, how the shim arrives, resources, placement,
// volumes, services, the helper container, security, the shim's TTY,
// shell aliases and extra arguments, the pod patch — and leaves out what
// differs per job: Name, JobID, Scripts, After, Serve, Env, MaskEnv,
// Timeout, DeadlineMargin, AfterTimeout, TTL and IdleTimeout (the job
// command and the claim carry those), and Labels and Annotations (the
// claim adds the job's). Namespace is covered: a pool serves its own
// namespace only. The result is 16 hex digits (a label value).
func PoolHash(spec Spec) (string, error) {
	s := poolSettings(spec)
	objs, err := Build(s)
	if err != nil {
		return "", fmt.Errorf("kube: the pod settings to hash: %w", err)
	}
	// The specs' protobuf encoding (the API's own, with map keys in
	// order): deterministic, and far cheaper than JSON's reflection on a
	// command's first call.
	h := sha256.New()
	h.Write([]byte(s.Namespace))
	for _, p := range []*corev1.Pod{objs.Pod, objs.Fallback} {
		if p == nil {
			continue
		}
		b, err := p.Spec.Marshal()
		if err != nil {
			return "", fmt.Errorf("kube: encode the pod settings to hash: %w", err)
		}
		h.Write([]byte{0})
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), nil
}

// poolSettings returns spec without what is a job's own (see PoolHash),
// with a fixed name so the hash does not depend on a random one.
func poolSettings(spec Spec) Spec {
	s := spec
	s.Name, s.JobID = "tether-pool", "tether-pool"
	s.Scripts, s.After, s.Serve = nil, nil, true
	s.Env, s.MaskEnv = nil, nil
	s.Timeout, s.DeadlineMargin, s.AfterTimeout, s.TTL, s.IdleTimeout = 0, 0, 0, 0, 0
	s.Labels, s.Annotations = nil, nil
	return s
}

// cloneMap returns a copy of m, never nil.
func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+3)
	for k, v := range m {
		out[k] = v
	}
	return out
}
