package gitlab

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"

	"github.com/tether-ci/tether/client/kube"
	gitlab "github.com/tether-ci/tether/integration/gitlab/internal/runnerapi"
	"github.com/tether-ci/tether/internal/cmdutil"
	"github.com/tether-ci/tether/internal/contract"
	"github.com/tether-ci/tether/settings"
)

// Settings are the driver's settings: flags of `tether gitlab`, or keys
// of its config file (--config, default $TETHER_CONFIG), the same names and
// file format as `tether run` (settings.ApplyFile). The pod-shaping ones are
// tether run's own (settings.Pod). Parse them with Parse (or NewFlagSet,
// Complete and Validate, on a command line of your own), or set them in
// Go: their defaults are the flags', which Parse of no arguments gives.
type Settings struct {
	settings.Pod
	Namespace, Kubeconfig, Context string
	// Image is the build image of jobs that name none.
	Image string
	// Pool names a pool of warm pods (`tether pool serve`) whose pod a job
	// claims when the job's image, services and pod settings are the
	// pool's; otherwise the job starts on a pod of its own.
	Pool string
	// HelperImage carries tether-shim (copied into every container).
	HelperImage string
	// GitLabHelperImage runs the stages that need git or
	// gitlab-runner-helper ("none": every stage in the build container).
	GitLabHelperImage string
	// HelperResources are the helper container's (--gitlab-helper-cpu, …).
	HelperResources settings.Resources
	PullPolicy      string
	// AllowedPullPolicies are the pull policies a job may choose for its
	// images (image:pull_policy in .gitlab-ci.yml), in Kubernetes' names
	// once validated; empty: PullPolicy alone, if set.
	AllowedPullPolicies []string
	IdleTimeout         time.Duration
	// TTLMargin is added to the job's timeout for the pod's TTL annotation.
	TTLMargin time.Duration
	BuildsDir string
	CacheDir  string
	// Shell runs every stage script (absolute path in the job image),
	// whatever its #! line says: the runner's scripts start with
	// #!/usr/bin/env bash, which images without /usr/bin/env cannot run.
	// Empty: bash where the container has it, else sh (the shim's choice
	// for a script without #!), as GitLab's Kubernetes executor does.
	Shell string
	// LogSettings are the driver's own structured log, written only when
	// one of them asks for it.
	LogSettings
	// StageAgent makes Command's prepare start the job's stage agent
	// (Agent), which tether-stage reaches; off, every stage is a `tether
	// gitlab run` of its own.
	StageAgent bool
	// AgentCommand is the command line that runs the agent (the tether
	// binary, "gitlab", "agent" and the settings' flags): the command
	// line sets it; nil (a runner calling the driver in process) starts
	// none.
	AgentCommand []string
	// kube is the agent's Kubernetes connection, reused by its stages.
	kube *kubeConn
	// stageStarted, when set (by the agent), is called with the stage's
	// job ID and the stream offset its records start at, before the job
	// can reach the shim.
	stageStarted func(job string, from int64)
	// spares are the agent's spare attaches, which its stages use.
	spares *spareSet
	// readJob, when set (by the agent), reads the job response in place
	// of gitlab.ReadJob.
	readJob func(Env) (*gitlab.Job, error)
	// clock, when set (by the agent), times the stage's steps.
	clock *stageClock
}

// gitlabNoHelper is the GitLabHelperImage that turns the helper container off.
const gitlabNoHelper = "none"

// NewFlagSet returns the FlagSet of `tether gitlab` bound to f: errors
// are returned, never printed.
func NewFlagSet(f *Settings) *pflag.FlagSet {
	fs := cmdutil.NewFlagSet("tether gitlab")
	f.AddFlags(fs)
	return fs
}

// AddFlags registers every setting on fs, named as the flags and config
// file keys of `tether gitlab`, with their defaults.
func (f *Settings) AddFlags(fs *pflag.FlagSet) {
	f.Pod.AddFlags(fs)
	fs.StringVarP(&f.Namespace, "namespace", "n", "", "Kubernetes `NAMESPACE` of the job pods (default: the kubeconfig's)")
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
	fs.StringVar(&f.Context, "context", "", "kubeconfig context")
	fs.StringVar(&f.Image, "image", "", "build image of jobs that name no image:")
	fs.StringVar(&f.Pool, "pool", "", "claim a warm pod of this `POOL` (tether pool serve; a pool for: gitlab) for a job whose image, services and pod settings are the pool's; other jobs, and every job when no pod is ready, start a pod of their own")
	fs.StringVar(&f.HelperImage, "helper-image", contract.DefaultHelperImage(), "image that carries tether-shim")
	fs.StringVar(&f.GitLabHelperImage, "gitlab-helper-image", gitlab.DefaultHelperImage,
		"image of the helper container that runs the stages needing git or gitlab-runner-helper (sources, caches, artifacts); ${NAME} is the job variable NAME, e.g. ${CI_RUNNER_VERSION}; none: every stage in the build container")
	f.HelperResources.AddFlags(fs, "gitlab-helper-", "the helper container")
	fs.StringVar(&f.PullPolicy, "pull-policy", "", "image pull `POLICY` of the job pods: Always, IfNotPresent or Never (default: Kubernetes')")
	fs.StringSliceVar(&f.AllowedPullPolicies, "allowed-pull-policies", nil, "pull `POLICY` a job may choose for its image and services (pull_policy in .gitlab-ci.yml): always, if-not-present or never; comma-separated or repeatable (default: pull-policy alone; none when it is unset, and a job that chooses one fails)")
	fs.DurationVar(&f.IdleTimeout, "idle-timeout", gitlabIdleTimeout, "the job pod ends itself when no stage runs and no driver process attached for this long (0 = never)")
	fs.DurationVar(&f.TTLMargin, "ttl-margin", kube.DefaultTTLMargin, "the pod's TTL (after which tether gc deletes it) is the job's timeout plus this (no timeout: 24h)")
	fs.StringVar(&f.BuildsDir, "builds-dir", "/builds", "builds_dir: where the project is checked out, a volume shared by the build and helper containers")
	fs.StringVar(&f.CacheDir, "cache-dir", "/cache", "cache_dir: where caches are kept, a volume shared by the build and helper containers")
	f.LogSettings.register(fs)
	fs.BoolVar(&f.StageAgent, "stage-agent", true, "prepare starts the job's stage agent, which keeps the Kubernetes connection for the job's stages; tether-stage (run_exec) runs stages through it, in milliseconds, and falls back to tether gitlab run without one")
	fs.StringVar(&f.Shell, "shell", "", "runs every stage script, whatever its #! line (absolute path in the images; default: bash where the container has it, else sh, as GitLab's Kubernetes executor)")
}

// Parse parses args (after the command's name) and the config file into
// f, validates the driver's own settings and returns the positional
// arguments. env gives $TETHER_CONFIG, the config file when args name
// none.
func Parse(f *Settings, args []string, env Env) ([]string, error) {
	fs := NewFlagSet(f)
	pos, err := cmdutil.ParseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if err := f.Complete(fs, env); err != nil {
		return nil, err
	}
	return pos, f.Validate()
}

// Complete sets what the command line (fs, parsed) left unset from the
// driver config file: --config, else $TETHER_CONFIG of env.
func (f *Settings) Complete(fs *pflag.FlagSet, env Env) error {
	if f.Config == "" {
		f.Config = env("TETHER_CONFIG")
	}
	if err := f.Pod.Complete(fs); err != nil {
		return fmt.Errorf("the driver config: %w", err)
	}
	return nil
}

// Validate checks the driver's own settings and puts the allowed pull
// policies into Kubernetes' names; every error names its setting. The pod
// shaping (settings.Pod) is checked where Prepare applies it: its errors
// then start with "the driver config:".
func (f *Settings) Validate() error {
	if f.Shell != "" && !strings.HasPrefix(f.Shell, "/") {
		return fmt.Errorf("shell %q must be an absolute path in the job image", f.Shell)
	}
	for name, dir := range map[string]string{"builds-dir": f.BuildsDir, "cache-dir": f.CacheDir} {
		if !strings.HasPrefix(dir, "/") {
			return fmt.Errorf("%s %q must be an absolute path", name, dir)
		}
		if d := strings.TrimRight(dir, "/"); d == "" || d == "/tether" || strings.HasPrefix(d, "/tether/") {
			return fmt.Errorf("%s %q would cover /tether, where the shim lives", name, dir)
		}
	}
	switch corev1.PullPolicy(f.PullPolicy) {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		return fmt.Errorf("pull-policy %q: want Always, IfNotPresent or Never", f.PullPolicy)
	}
	for i, p := range f.AllowedPullPolicies {
		k, err := gitlab.NormalizePullPolicy(p)
		if err != nil {
			return fmt.Errorf("allowed-pull-policies: %w", err)
		}
		f.AllowedPullPolicies[i] = k
	}
	if err := f.LogSettings.validate(); err != nil {
		return err
	}
	if f.IdleTimeout < 0 {
		return errors.New("idle-timeout must not be negative")
	}
	if f.TTLMargin <= 0 {
		return errors.New("ttl-margin must be positive")
	}
	if f.GitLabHelperImage == "" {
		return fmt.Errorf("gitlab-helper-image is empty: name an image, or %q to run every stage in the build container", gitlabNoHelper)
	}
	return nil
}

// helperImage is the helper container's image for this job ("" for none):
// ${NAME} in the setting is the job variable NAME (CUSTOM_ENV_NAME).
func (f *Settings) helperImage(getenv func(string) string) (string, error) {
	if f.GitLabHelperImage == gitlabNoHelper {
		return "", nil
	}
	var missing []string
	image := os.Expand(f.GitLabHelperImage, func(name string) string {
		v := gitlab.Env(getenv, name)
		if v == "" {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("gitlab-helper-image %q: the runner passed no %s: set gitlab-helper-image to a full image name (or %q)",
			f.GitLabHelperImage, strings.Join(missing, ", "), gitlabNoHelper)
	}
	return image, nil
}

// where names the driver config for a message: its file, or how to give one.
func (f *Settings) where() string {
	if f.Config == "" {
		return "a driver config file (--config FILE or $TETHER_CONFIG)"
	}
	return f.Config
}
