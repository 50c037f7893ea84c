package actions

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tether-ci/tether/settings"
)

// Environment variables the hook reads (besides the runner's own).
const (
	// EnvNamespace is the namespace of the job pods; default the
	// reference hook's EnvRunnerNamespace, else the kubeconfig's (in a
	// pod: the service account's).
	EnvNamespace = "TETHER_ACTIONS_NAMESPACE"
	// EnvKubeconfig is an explicit kubeconfig file; default $KUBECONFIG,
	// ~/.kube/config, then the in-cluster service account.
	EnvKubeconfig = "TETHER_ACTIONS_KUBECONFIG"
	// EnvHelperImage is the image that carries tether-shim.
	EnvHelperImage = "TETHER_ACTIONS_HELPER_IMAGE"
	// EnvPullPolicy is the pull policy of every image of the job pod
	// (Always, IfNotPresent, Never).
	EnvPullPolicy = "TETHER_ACTIONS_PULL_POLICY"
	// EnvJobTimeout bounds the job pod's life (Go duration, default
	// DefaultJobTimeout): its activeDeadlineSeconds and TTL annotation.
	EnvJobTimeout = "TETHER_ACTIONS_JOB_TIMEOUT"
	// EnvIdleTimeout makes the job pod end itself when no step ran for
	// this long (Go duration, default DefaultIdleTimeout; 0 for never).
	EnvIdleTimeout = "TETHER_ACTIONS_IDLE_TIMEOUT"
	// EnvReconnectTimeout is how long a step may stay unreachable (the API
	// server or the pod) before its outcome counts as unknown and the step
	// fails (Go duration, default client.DefaultReconnectTimeout).
	EnvReconnectTimeout = "TETHER_ACTIONS_RECONNECT_TIMEOUT"
	// EnvServiceAccount is the job pod's service account.
	EnvServiceAccount = "TETHER_ACTIONS_SERVICE_ACCOUNT"
	// EnvNodeSelector constrains the job pod's nodes: key=value,key=value.
	EnvNodeSelector = "TETHER_ACTIONS_NODE_SELECTOR"
	// EnvConfig names a YAML file of the pod settings `tether run` and
	// `tether gitlab` take (keys are their long flag names: memory, cpu,
	// toleration, volume, pod-patch, label, ...; package settings).
	EnvConfig = "TETHER_ACTIONS_CONFIG"
	// EnvCopyLimit bounds what prepare_job copies from the runner's disk
	// into the job pod (the workspace, _tool and _github_home together): a
	// Kubernetes quantity (512Mi, 2Gi) or bytes, default DefaultCopyLimit.
	EnvCopyLimit = "TETHER_ACTIONS_COPY_LIMIT"
	// EnvPool names a pool of warm pods (`tether pool serve`, a pool with
	// for: actions) in the job pods' namespace: prepare_job claims one of
	// its pods when it has the job's pod shape, else creates the pod.
	EnvPool = "TETHER_ACTIONS_POOL"
	// EnvDebug, when "1" or "true", logs the hook's diagnostics to stderr.
	EnvDebug = "TETHER_ACTIONS_DEBUG"
	// EnvBin is read by the launcher (deploy/actions/tether-hook.sh): the
	// tether binary to exec, default "tether" on PATH.
	EnvBin = "TETHER_ACTIONS_BIN"
)

// Environment variables the runner (ARC, the reference hook) defines.
const (
	// EnvRunnerPodName is the runner's pod (set by ARC): the job pod's
	// owner, so it goes when the runner's pod goes.
	EnvRunnerPodName = "ACTIONS_RUNNER_POD_NAME"
	// EnvRunnerNamespace is the reference hook's namespace variable.
	EnvRunnerNamespace = "ACTIONS_RUNNER_KUBERNETES_NAMESPACE"
	// EnvPrepareTimeout is the reference hook's bound on prepare_job's
	// wait for the pod, in seconds.
	EnvPrepareTimeout = "ACTIONS_RUNNER_PREPARE_JOB_TIMEOUT_SECONDS"
	// EnvRunnerTemp is the runner-host temp directory (_work/_temp).
	EnvRunnerTemp = "RUNNER_TEMP"
)

// Defaults of Settings.
const (
	// DefaultJobTimeout is GitHub's default job timeout (timeout-minutes).
	DefaultJobTimeout = 6 * time.Hour
	// DefaultIdleTimeout ends a job pod no step used for this long (its
	// runner vanished without deleting its pod).
	DefaultIdleTimeout = 30 * time.Minute
	// DefaultPrepareTimeout bounds prepare_job's wait for the pod.
	DefaultPrepareTimeout = 10 * time.Minute
	// DefaultCopyLimit bounds what prepare_job copies from the runner's
	// disk into the job pod.
	DefaultCopyLimit = 1 << 30
)

// Settings are the hook's settings: where and how it makes job pods.
type Settings struct {
	// Kubeconfig is an explicit kubeconfig file ("" the default chain).
	Kubeconfig string
	// Namespace of the job pods ("" the kubeconfig's).
	Namespace string
	// HelperImage carries tether-shim ("" the project's default).
	HelperImage string
	// PullPolicy of every image of the job pod ("" Kubernetes' default).
	PullPolicy corev1.PullPolicy
	// JobTimeout bounds the job pod's life.
	JobTimeout time.Duration
	// IdleTimeout ends a job pod no step used for this long (0: never).
	IdleTimeout time.Duration
	// PrepareTimeout bounds prepare_job's wait for the pod to run.
	PrepareTimeout time.Duration
	// ReconnectTimeout is how long a step may stay unreachable before it
	// fails as unknown (0: client.DefaultReconnectTimeout).
	ReconnectTimeout time.Duration
	// ServiceAccount runs the job pod ("" the namespace's default).
	ServiceAccount string
	// NodeSelector constrains the job pod's nodes.
	NodeSelector map[string]string
	// Pod are the shared pod settings (EnvConfig); the fields above win
	// where both set the same thing.
	Pod settings.Pod
	// CopyLimit is the most bytes prepare_job copies from the runner's
	// disk into the job pod (EnvCopyLimit).
	CopyLimit int64
	// Pool is the pool of warm pods prepare_job claims from ("" none).
	Pool string
	// Debug logs the hook's diagnostics to stderr.
	Debug bool
}

// SettingsFromEnv reads the settings from the environment (the Env*
// variables above); every malformed value is reported, each naming its
// variable (the errors joined, one a line).
func SettingsFromEnv(getenv func(string) string) (Settings, error) {
	s := Settings{
		Kubeconfig:     getenv(EnvKubeconfig),
		Namespace:      getenv(EnvNamespace),
		HelperImage:    getenv(EnvHelperImage),
		PullPolicy:     corev1.PullPolicy(getenv(EnvPullPolicy)),
		ServiceAccount: getenv(EnvServiceAccount),
		Pool:           getenv(EnvPool),
		JobTimeout:     DefaultJobTimeout,
		IdleTimeout:    DefaultIdleTimeout,
		PrepareTimeout: DefaultPrepareTimeout,
		CopyLimit:      DefaultCopyLimit,
	}
	var errs []error
	if s.Namespace == "" {
		s.Namespace = getenv(EnvRunnerNamespace)
	}
	switch s.PullPolicy {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		errs = append(errs, fmt.Errorf("%s=%q: want Always, IfNotPresent or Never", EnvPullPolicy, s.PullPolicy))
	}
	for _, d := range []struct {
		name string
		to   *time.Duration
	}{{EnvJobTimeout, &s.JobTimeout}, {EnvIdleTimeout, &s.IdleTimeout}, {EnvReconnectTimeout, &s.ReconnectTimeout}} {
		v := getenv(d.name)
		if v == "" {
			continue
		}
		t, err := time.ParseDuration(v)
		if err != nil || t < 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a duration such as 90m or 6h (0 for none)", d.name, v))
			continue
		}
		*d.to = t
	}
	if s.Pool != "" && len(validation.IsDNS1123Label(s.Pool)) > 0 {
		errs = append(errs, fmt.Errorf("%s=%q: want a pool's name (a DNS label, key name: in the pools file)", EnvPool, s.Pool))
	}
	if v := getenv(EnvPrepareTimeout); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a number of seconds above 0", EnvPrepareTimeout, v))
		} else {
			s.PrepareTimeout = time.Duration(n) * time.Second
		}
	}
	if v := getenv(EnvCopyLimit); v != "" {
		q, err := resource.ParseQuantity(v)
		if err != nil || q.Sign() < 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a size such as 512Mi or 2Gi (0 copies nothing but empty directories)", EnvCopyLimit, v))
		} else {
			s.CopyLimit = q.Value()
		}
	}
	if v := getenv(EnvNodeSelector); v != "" {
		s.NodeSelector = map[string]string{}
		for _, kv := range strings.Split(v, ",") {
			k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || k == "" {
				errs = append(errs, fmt.Errorf("%s=%q: want key=value pairs separated by commas", EnvNodeSelector, v))
				break
			}
			s.NodeSelector[k] = val
		}
	}
	if path := getenv(EnvConfig); path != "" {
		fs := pflag.NewFlagSet("tether actions", pflag.ContinueOnError)
		s.Pod.AddFlags(fs)
		if err := settings.ApplyFile(fs, path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvConfig, err))
		} else if err := s.Pod.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", EnvConfig, path, err))
		}
	}
	switch strings.ToLower(getenv(EnvDebug)) {
	case "1", "true", "yes":
		s.Debug = true
	}
	return s, errors.Join(errs...)
}
