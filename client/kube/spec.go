package kube

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tether-ci/tether/internal/contract"
	"github.com/tether-ci/tether/internal/random"
	"github.com/tether-ci/tether/protocol"
)

// Labels and annotations Tether puts on what it creates.
const (
	// LabelManagedBy is set to ManagedByValue on every object.
	LabelManagedBy = contract.LabelManagedBy
	// ManagedByValue is the LabelManagedBy value.
	ManagedByValue = contract.ManagedByValue
	// LabelJob carries the job ID on every object.
	LabelJob = contract.LabelJob
	// AnnotationTTL is the pod's time to live in seconds, read by the shim
	// (through the downward API) and by the cleaner (`tether gc`).
	AnnotationTTL = contract.AnnotationTTL
	// AnnotationDefaultContainer makes kubectl attach/logs pick the build
	// container.
	AnnotationDefaultContainer = "kubectl.kubernetes.io/default-container"
	// AnnotationSafeToEvict ("false") keeps the Cluster Autoscaler from
	// removing a job pod's node while the job runs.
	AnnotationSafeToEvict = contract.AnnotationSafeToEvict
	// AnnotationDoNotDisrupt ("true") keeps Karpenter from disrupting a
	// job pod's node while the job runs.
	AnnotationDoNotDisrupt = contract.AnnotationDoNotDisrupt
)

// Names and paths inside the pod.
const (
	// BuildContainer is the name of the container the shim runs in.
	BuildContainer = "build"
	// InitContainer is the name of the init container that copies the shim.
	InitContainer = "tether-init"
	// HelperContainer is the name of the second shim container (Spec.Helper).
	HelperContainer = "helper"
	// ScriptsDir is where the scripts ConfigMap is mounted.
	ScriptsDir = "/tether/scripts"
	// ShimPath is where the build container finds tether-shim.
	ShimPath = "/tether/bin/tether-shim"
	// InitMountPath is where the init container mounts the shared emptyDir
	// (the helper image has a /tether file of its own: the tether CLI).
	InitMountPath = "/mnt/tether"
	// SpoolDir keeps the shim's whole record stream for resume.
	SpoolDir = "/tether/spool"
	// HelperSpoolDir is the helper container's spool (Spec.Helper).
	HelperSpoolDir = "/tether/spool-helper"
	// FilesDir is the memory-backed volume the file command writes into
	// (tether-shim --files-dir).
	FilesDir = "/tether/files"
	// PodInfoDir is the downward-API volume with the pod's annotations.
	PodInfoDir = "/tether/podinfo"
)

// ShimEnvPrefix starts the names of the environment variables that
// configure tether-shim (TETHER_SHELL, TETHER_GRACE, …).
const ShimEnvPrefix = "TETHER_"

// DefaultHelperImage is the image that carries tether-shim when
// Spec.HelperImage is empty: the project's published shim-only image tagged
// with this build's version (ghcr.io/tether-ci/tether-shim:v1.2.3; the dev
// tag for builds that are not releases).
func DefaultHelperImage() string { return contract.DefaultHelperImage() }

// Defaults of Spec.
const (
	// DefaultDeadlineMargin is added to the job timeout for the pod's
	// activeDeadlineSeconds, so the shim's own deadline (which reports in
	// band) fires first even after a slow image pull.
	DefaultDeadlineMargin = 2 * time.Minute
	// DefaultAfterTimeout is the shim's default budget for the
	// after-scripts after a deadline.
	DefaultAfterTimeout = contract.DefaultAfterTimeoutSeconds * time.Second
	// DefaultTTLMargin is added to the job timeout for the TTL annotation
	// when Spec.TTL is zero (the job timeout plus 15 minutes).
	DefaultTTLMargin = 15 * time.Minute
	// DefaultNoTimeoutTTL is the TTL when the job has no timeout.
	DefaultNoTimeoutTTL = 24 * time.Hour
)

// MaxObjectData is the most data a ConfigMap or a Secret holds (the sum of
// its values), enforced by the apiserver.
const MaxObjectData = 1 << 20

// Script is one script file the job runs.
type Script struct {
	// Name is the file's name (a base name such as "build.sh"); it becomes
	// part of the path in the pod, sanitized.
	Name string
	// Content is the script's text.
	Content []byte
}

// Spec describes one job's pod.
type Spec struct {
	// Namespace of the pod and its objects. Required.
	Namespace string
	// Name is the pod's name; "" picks "tether-" and a random suffix.
	Name string
	// JobID identifies the job (label tether.dev/job, the shim's job ID);
	// "" picks one matching the pod name.
	JobID string
	// Image is the build container's image. Required.
	Image string
	// HelperImage carries tether-shim; default DefaultHelperImage.
	HelperImage string
	// ShimFrom is how the build container gets tether-shim from
	// HelperImage: ShimFromInit (the default) or ShimFromImage.
	ShimFrom ShimSource
	// PullPolicy applies to every image of the pod; "" lets Kubernetes
	// decide.
	PullPolicy corev1.PullPolicy
	// ImagePullPolicy, when set, is the build container's instead of
	// PullPolicy (a job that chose its image's policy).
	ImagePullPolicy corev1.PullPolicy
	// Scripts are the main scripts, After the after-scripts.
	Scripts, After []Script
	// Serve makes a pod without scripts: its jobs deliver their scripts
	// over the attach stream (client.Job.Files) into FilesDir, a
	// memory-backed volume, so nothing of them is stored in the cluster.
	// No ConfigMap is created. (Every pod has FilesDir.)
	Serve bool
	// Env are the job's variables, delivered in a Secret via envFrom. Names
	// starting with ShimEnvPrefix are refused: the build container's
	// environment configures tether-shim.
	Env map[string]string
	// Timeout is the job timeout: the shim's --deadline (it stops the job
	// itself and says so in band), and with DeadlineMargin the pod's
	// activeDeadlineSeconds. 0 means none.
	Timeout time.Duration
	// DeadlineMargin is added to Timeout for activeDeadlineSeconds;
	// default DefaultDeadlineMargin plus the shim's grace and the
	// after-scripts' budget (AfterTimeout), so the after-scripts that run
	// after the deadline finish before Kubernetes ends the pod.
	DeadlineMargin time.Duration
	// AfterTimeout is the after-scripts' budget once the deadline stopped
	// the main scripts (the shim's --after-timeout); 0 keeps the shim's
	// default, DefaultAfterTimeout. The after-scripts do not run after a
	// deadline when it is negative.
	AfterTimeout time.Duration
	// TTL is the pod's TTL annotation; default Timeout+DefaultTTLMargin
	// (DefaultNoTimeoutTTL without a timeout).
	TTL time.Duration
	// IdleTimeout makes the shim end itself when no script runs and no
	// client pinged it for this long; 0 means never.
	IdleTimeout time.Duration
	// MaskEnv names Env variables whose values the shim replaces with
	// [MASKED] in all script output (and URL-encoded), before the output
	// leaves the pod: kubectl logs, the spool and every client see the
	// masked text. Each value must be at least 8 bytes.
	MaskEnv []string
	// TTY runs the scripts under a pseudo-terminal inside the build
	// container (the shim's --tty), for tools that colour or animate only
	// on one. The container itself still has no TTY: the record stream
	// needs clean bytes.
	TTY bool
	// CommandAliases are commands the shims offer scripts under another
	// name (tether-shim --command-alias NAME=TARGET): in a container whose
	// PATH has no Name but has Target, scripts that call Name run Target.
	// The build container's shim and the helper container's (Spec.Helper)
	// get them; the hello of each shim says how they resolved.
	CommandAliases []CommandAlias
	// ShimArgs are extra tether-shim flags.
	ShimArgs []string
	// ServiceAccountName runs the pod as this service account ("" default).
	ServiceAccountName string
	// NodeSelector constrains the nodes the pod may run on.
	NodeSelector map[string]string
	// Labels and Annotations are added to the pod (Tether's own win).
	Labels, Annotations map[string]string
	// TerminationGracePeriod for the pod; 0 keeps Kubernetes' default.
	TerminationGracePeriod time.Duration
	// NoDisruptionProtection leaves the pod open to voluntary disruption
	// (a node drain, the Cluster Autoscaler, Karpenter). By default the
	// pod carries AnnotationSafeToEvict and AnnotationDoNotDisrupt, and
	// Create gives it a PodDisruptionBudget of its own (see Protect).
	NoDisruptionProtection bool

	// PodSecurityContext is copied onto the pod (nil: none, unless
	// Restricted fills one in). Its RunAsUser, when set and not 0, is also
	// the init container's user.
	PodSecurityContext *corev1.PodSecurityContext
	// SecurityContext is the build container's security context (nil:
	// none, unless Restricted or a read-only root needs one). When it makes
	// the root filesystem read-only, an emptyDir is mounted at TmpDir
	// (/tmp) so shells and tools that need a temporary directory work.
	SecurityContext *corev1.SecurityContext
	// Restricted makes the pod pass the Pod Security Standard "restricted"
	// (a namespace labelled pod-security.kubernetes.io/enforce=restricted
	// rejects anything else). Where the caller left a field unset it fills
	// in: the build container's allowPrivilegeEscalation=false,
	// capabilities drop ALL, runAsNonRoot=true (unless the pod sets
	// runAsNonRoot), readOnlyRootFilesystem=true (not required by the
	// profile; set it false explicitly for images that write outside
	// /tmp and the Tether volumes), and runAsUser=RestrictedUID (65532)
	// when neither context sets a runAsUser; and the pod's seccompProfile
	// RuntimeDefault. The default user replaces the image's USER: an image
	// that already runs as a non-root numeric USER passes runAsNonRoot by
	// itself, so set its uid in SecurityContext.RunAsUser to keep it.
	// Explicit settings always win over these defaults; an explicit
	// setting the profile forbids (Privileged=true,
	// AllowPrivilegeEscalation=true, RunAsUser=0, RunAsNonRoot=false,
	// added capabilities other than NET_BIND_SERVICE, an Unconfined
	// seccomp or AppArmor profile, ...) makes Build fail. The init
	// container passes the profile whether or not Restricted is set.
	Restricted bool

	// Pod shaping: the settings a production runner puts on its pods
	// (applied by shaping.go).

	// Resources are the build container's requests and limits. A namespace
	// whose ResourceQuota covers cpu or memory rejects pods without them.
	Resources corev1.ResourceRequirements
	// InitResources are the init container's; when empty it gets the build
	// container's Resources (a pod's effective request is the larger of its
	// init containers' and the sum of its containers', so this costs no
	// quota).
	InitResources corev1.ResourceRequirements
	// Tolerations let the pod run on tainted nodes (GPU or arm64 pools).
	Tolerations []corev1.Toleration
	// Affinity constrains or spreads where the pod is scheduled.
	Affinity *corev1.Affinity
	// ImagePullSecrets name the Secrets used to pull private images.
	ImagePullSecrets []string
	// OwnPullSecret adds a pull Secret named after the pod (Name plus
	// PullSecretSuffix) to its imagePullSecrets, after ImagePullSecrets:
	// the caller creates it once the pod exists (owned by the pod), for
	// credentials that arrive with the job. A pod's imagePullSecrets are
	// fixed at its creation, so a warm pod names its own too; the claimer
	// creates the Secret. The kubelet pulls without a Secret that does
	// not exist yet. PoolHash covers the setting, not the pod's name.
	OwnPullSecret bool
	// Volumes are added to the pod and VolumeMounts to the build container
	// (emptyDir, PVC, hostPath, ConfigMap, Secret, …). Their names must
	// not be one of Tether's own volumes (tether, scripts, podinfo, tmp)
	// and no mount may cover /tether.
	Volumes      []corev1.Volume
	VolumeMounts []corev1.VolumeMount
	// PriorityClassName and RuntimeClassName are copied onto the pod.
	PriorityClassName string
	RuntimeClassName  string
	// DNSPolicy and DNSConfig are copied onto the pod.
	DNSPolicy corev1.DNSPolicy
	DNSConfig *corev1.PodDNSConfig
	// HostAliases are added to the pod's /etc/hosts.
	HostAliases []corev1.HostAlias
	// Services are sidecar containers (databases, caches, …) the job's
	// scripts reach on localhost, each also under its aliases. They run as
	// native sidecars (init containers with restartPolicy Always), so they
	// start before the build container and never keep the pod alive: when
	// the shim exits, the kubelet stops them and the pod ends. The job's
	// exit code is always the scripts'.
	Services []Service
	// Helper, when set, adds a second container running tether-shim in
	// serve mode (named HelperContainer), from an image with tools the
	// build image may lack (GitLab's helper image: git and
	// gitlab-runner-helper). It runs as a native sidecar, so it starts
	// before the build container and never keeps the pod alive, and it
	// mounts the build container's volumes (Spec.VolumeMounts, the files
	// volume and /tmp): a client attaches to it by name (Pod.Container) to
	// run scripts on the same files. It gets no job variables (Spec.Env).
	Helper *Helper
	// ImageCopies are init containers that copy a directory out of an
	// image into one of Volumes before the build container starts
	// (imagecopy.go).
	ImageCopies []ImageCopy
	// PodPatch, when set, is applied to the built pod last (patch.go);
	// host networking and any other pod field are reachable through it.
	PodPatch *PodPatch
}

// CommandAlias is one of Spec.CommandAliases: scripts that call Name run
// Target where the container's PATH has no Name.
type CommandAlias struct {
	// Name is the command scripts call: a file name, not a path.
	Name string
	// Target is the command that stands in for it: a command name or an
	// absolute path.
	Target string
}

// validate says what is wrong with a, as tether-shim would refuse it.
func (a CommandAlias) validate() error {
	bad := func(why string) error { return fmt.Errorf("kube: command alias %s=%s: %s", a.Name, a.Target, why) }
	switch {
	case a.Name == "" || a.Target == "":
		return bad("Name and Target are required")
	case strings.ContainsAny(a.Name+a.Target, ",= \t\n"):
		return bad("Name and Target may not contain commas, '=' or blanks")
	case strings.Contains(a.Name, "/") || a.Name == "." || a.Name == "..":
		return bad("Name must be a command name, not a path")
	case strings.Contains(a.Target, "/") && !strings.HasPrefix(a.Target, "/"):
		return bad("Target must be a command name or an absolute path")
	}
	return nil
}

var nameChars = regexp.MustCompile(`[^-._a-zA-Z0-9]+`)

// NewPodName is a fresh random pod name ("tether-" and ten hex digits),
// the one Build gives a Spec without a Name.
func NewPodName() string { return "tether-" + random.Hex(5) }

// withDefaults validates s and fills in the defaults.
func (s Spec) withDefaults() (Spec, error) {
	if s.Namespace == "" {
		return s, errors.New("kube: Spec.Namespace is required")
	}
	if s.Image == "" {
		return s, errors.New("kube: Spec.Image is required (the build container's image)")
	}
	if len(s.Scripts)+len(s.After) == 0 && !s.Serve {
		return s, errors.New("kube: the job has no scripts (set Spec.Serve for a pod whose scripts arrive over the stream)")
	}
	if s.Serve && len(s.Scripts)+len(s.After) > 0 {
		return s, errors.New("kube: Spec.Serve pods take their scripts over the stream (client.Job.Files), not in Spec.Scripts")
	}
	if s.Timeout < 0 || s.TTL < 0 || s.IdleTimeout < 0 || s.DeadlineMargin < 0 {
		return s, errors.New("kube: Timeout, TTL, IdleTimeout and DeadlineMargin must not be negative")
	}
	if s.HelperImage == "" {
		s.HelperImage = DefaultHelperImage()
	}
	for _, a := range s.CommandAliases {
		if err := a.validate(); err != nil {
			return s, err
		}
	}
	switch s.ShimFrom {
	case "":
		s.ShimFrom = ShimFromInit
	case ShimFromInit, ShimFromImage:
	default:
		return s, fmt.Errorf("kube: Spec.ShimFrom %q: want %q or %q", s.ShimFrom, ShimFromInit, ShimFromImage)
	}
	if s.Name == "" {
		s.Name = NewPodName()
	}
	if errs := validation.IsDNS1123Subdomain(s.Name); len(errs) > 0 {
		return s, fmt.Errorf("kube: pod name %q: %s", s.Name, strings.Join(errs, "; "))
	}
	if s.JobID == "" {
		s.JobID = s.Name
	}
	if errs := validation.IsValidLabelValue(s.JobID); len(errs) > 0 {
		return s, fmt.Errorf("kube: job ID %q cannot be a label value: %s", s.JobID, strings.Join(errs, "; "))
	}
	if s.DeadlineMargin == 0 {
		s.DeadlineMargin = DefaultDeadlineMargin + contract.DefaultGraceSeconds*time.Second
		switch {
		case s.AfterTimeout == 0:
			s.DeadlineMargin += DefaultAfterTimeout
		case s.AfterTimeout > 0:
			s.DeadlineMargin += s.AfterTimeout
		}
	}
	if s.TTL == 0 {
		s.TTL = DefaultNoTimeoutTTL
		if s.Timeout > 0 {
			s.TTL = s.Timeout + DefaultTTLMargin
		}
	}
	var err error
	s.Services = slices.Clone(s.Services)
	if err := s.validateShaping(); err != nil {
		return s, err
	}
	if err := s.validateImageCopies(); err != nil {
		return s, err
	}
	if s.PodSecurityContext, s.SecurityContext, err = s.securityDefaults(); err != nil {
		return s, err
	}
	for _, name := range s.MaskEnv {
		v, ok := s.Env[name]
		if !ok {
			return s, fmt.Errorf("kube: MaskEnv names %s, which is not in Env", name)
		}
		if len(v) < protocol.MinMaskLen {
			return s, fmt.Errorf("kube: masked variable %s is %d bytes: values shorter than %d bytes are too short to mask safely", name, len(v), protocol.MinMaskLen)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		if errs := validation.IsEnvVarName(k); len(errs) > 0 {
			return s, fmt.Errorf("kube: variable name %q: %s", k, strings.Join(errs, "; "))
		}
		if strings.HasPrefix(k, ShimEnvPrefix) {
			return s, fmt.Errorf("kube: variable %s: names starting with %s are reserved: they configure tether-shim (pass shim options with Spec.ShimArgs)", k, ShimEnvPrefix)
		}
	}
	return s, nil
}

// scriptKey returns the ConfigMap key of the i-th script.
func scriptKey(i int, name string) string {
	base := nameChars.ReplaceAllString(path.Base(name), "_")
	base = strings.TrimLeft(base, ".")
	if base == "" || base == "_" {
		base = "script"
	}
	key := fmt.Sprintf("%02d-%s", i, base)
	if len(key) > 200 {
		key = key[:200]
	}
	return key
}

// seconds rounds d up to whole seconds.
func seconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }
