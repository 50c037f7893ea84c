package runcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/cmdutil"
	"github.com/tether-ci/tether/protocol"
	"github.com/tether-ci/tether/settings"

	"github.com/tether-ci/tether/internal/contract"
)

// Flags holds every `tether run` flag, for all backends, and the
// validated positional arguments. Backends read what they need.
type Flags struct {
	cmdutil.LogFlags

	// Backend selection: --local, --docker, else Kubernetes.
	Local  bool
	Docker bool

	// After are the after-scripts (--after, repeatable), absolute paths.
	After settings.StringList
	// Scripts are the main scripts (positional), absolute paths.
	Scripts []string

	// Shim is the tether-shim binary for --local (--shim).
	Shim string

	// Kubernetes (and docker, for Image/Env/HelperImage/Keep).
	Image     string        // --image: the build container's image
	Namespace string        // -n/--namespace ("" = kubeconfig's namespace)
	Timeout   time.Duration // --timeout: job timeout (shim deadline, activeDeadlineSeconds); 0 = none
	// AfterTimeout (--after-timeout) is the after-scripts' budget once the
	// timeout stopped the main scripts; 0 = they do not run then.
	AfterTimeout time.Duration
	TTL          time.Duration       // --ttl: pod TTL annotation for `tether gc`; 0 = timeout + 15m
	Env          settings.StringList // --env K=V (repeatable), validated
	// MaskEnv (--mask-env NAME, repeatable) names variables (from --env, else
	// tether's environment) whose values the shim masks in the output.
	MaskEnv settings.StringList
	// maskValues are MaskEnv's values, set by validate.
	maskValues  []string
	Kubeconfig  string        // --kubeconfig ("" = KUBECONFIG / ~/.kube/config / in-cluster)
	Context     string        // --context: kubeconfig context
	HelperImage string        // --helper-image: image carrying tether-shim
	Keep        bool          // --keep: do not delete the pod/container afterwards
	IdleTimeout time.Duration // --idle-timeout: the shim exits when idle and unpinged this long
	// Pool (--pool) names a pool of warm pods to claim the job's pod from
	// (Kubernetes only); a miss starts a cold pod at once.
	Pool string

	// Kubernetes pod security (kube.Spec.Restricted and SecurityContext).
	settings.Security

	// Pod shaping, shared with every integration.
	settings.Pod
	// OutputLimit is --output-limit (cmdutil.OutputLimit).
	OutputLimit cmdutil.OutputLimit
	// How the shim runs the scripts (engine.go).
	engineFlags

	// Logger is set by the command from the log flags.
	Logger *slog.Logger
	// Start is when the command began, for the job's total duration.
	Start time.Time
}

// NewFlagSet returns the FlagSet of `tether run` bound to f.
func NewFlagSet(f *Flags) *pflag.FlagSet {
	fs := cmdutil.NewFlagSet("tether run")

	f.LogFlags.Register(fs)
	f.Pod.AddFlags(fs)
	f.OutputLimit.Register(fs)
	registerEngineFlags(fs, &f.engineFlags)
	fs.BoolVar(&f.Local, "local", false, "run the shim as a local child process (no cluster)")
	fs.BoolVar(&f.Docker, "docker", false, "run in a docker/podman container")
	fs.Var(&f.After, "after", "after-`SCRIPT`, run even when a main script failed (repeatable)")
	fs.StringVar(&f.Shim, "shim", "", "tether-shim binary for --local (default: next to tether, else on PATH)")
	fs.StringVar(&f.Image, "image", "", "image of the build container (Kubernetes, docker)")
	fs.StringVarP(&f.Namespace, "namespace", "n", "", "Kubernetes `NAMESPACE` (default: the kubeconfig's)")
	fs.DurationVar(&f.Timeout, "timeout", time.Hour, "job timeout; the shim stops the job when it passes (0 = none)")
	fs.DurationVar(&f.AfterTimeout, "after-timeout", kube.DefaultAfterTimeout, "when --timeout stops the job, the after-scripts still run for at most this long (0 = they do not run then)")
	fs.DurationVar(&f.TTL, "ttl", 0, "pod TTL after which tether gc deletes it (0 = timeout + 15m)")
	fs.Var(&f.Env, "env", "job variable `K=V` (repeatable; names starting with TETHER_ are reserved for tether-shim)")
	fs.Var(&f.MaskEnv, "mask-env", "replace the value of variable `NAME` (from --env, else tether's environment; at least 8 bytes) with [MASKED] in the job's output, also URL-encoded, before it leaves the shim (repeatable)")
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
	fs.StringVar(&f.Context, "context", "", "kubeconfig context")
	fs.StringVar(&f.HelperImage, "helper-image", contract.DefaultHelperImage(), "image that carries tether-shim (for --kube and --docker)")
	fs.BoolVar(&f.Keep, "keep", false, "keep the pod/container after the job")
	fs.StringVar(&f.Pool, "pool", "", "claim a warm pod of this `POOL` (started by `tether pool serve`) when one has the job's pod settings; otherwise start a pod as usual")
	fs.DurationVar(&f.IdleTimeout, "idle-timeout", 10*time.Minute, "the shim exits when no script runs and no client pinged it for this long (0 = never)")
	f.Security.AddFlags(fs)
	return fs
}

// Run runs the job of the validated flags (Validate; Logger set) on the
// backend they choose and returns tether's exit code: the job's own, or
// one of cmdutil's.
func (f *Flags) Run(ctx context.Context, stdout, stderr io.Writer) int {
	job := client.Job{Scripts: f.Scripts, After: f.After, Mask: f.maskValues, Shell: f.Shell}
	f.jobStderr = stderr // the job's stderr with --stderr separate
	switch {
	case f.Local:
		return runLocal(ctx, f, job, stdout, stderr)
	case f.Docker:
		return runDocker(ctx, f, job, stdout, stderr)
	default:
		return runKube(ctx, f, job, stdout, stderr)
	}
}

// UsageErr prints a bad-input message of `tether run` and returns
// cmdutil.ExitUsage.
func UsageErr(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "tether run: "+format+"\nRun 'tether run --help' for usage.\n", args...)
	return cmdutil.ExitUsage
}

// Validate checks the flags (after Pod.Complete) and sets Scripts (and
// After) to absolute paths of the existing regular files pos (and After)
// name; its errors name the flag.
func (f *Flags) Validate(pos []string) error {
	if len(pos) == 0 {
		return errors.New("no scripts given")
	}
	if f.Local && f.Docker {
		return errors.New("--local and --docker exclude each other")
	}
	if !f.Local && !f.Docker && f.Image == "" {
		return errors.New("choose a backend: --local (no cluster), --docker, or --image IMAGE for Kubernetes")
	}
	if f.Pool != "" && (f.Local || f.Docker) {
		return errors.New("--pool applies to Kubernetes pods only, not to --local or --docker")
	}
	if f.Local && f.Image != "" {
		return errors.New("--image has no meaning with --local (scripts run on this machine)")
	}
	for _, kv := range f.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("--env %q: want KEY=VALUE", kv)
		}
		if strings.HasPrefix(k, "TETHER_") {
			return fmt.Errorf("--env %s: names starting with TETHER_ are reserved: they configure tether-shim", k)
		}
	}
	for _, name := range f.MaskEnv {
		v, ok := "", false
		for _, kv := range f.Env {
			if k, val, _ := strings.Cut(kv, "="); k == name {
				v, ok = val, true
			}
		}
		if !ok {
			v, ok = os.LookupEnv(name)
		}
		if !ok {
			return fmt.Errorf("--mask-env %s: no such variable in --env or the environment", name)
		}
		if len(v) < protocol.MinMaskLen {
			return fmt.Errorf("--mask-env %s: the value is %d bytes; values shorter than %d bytes are too short to mask safely", name, len(v), protocol.MinMaskLen)
		}
		f.maskValues = append(f.maskValues, v)
	}
	if err := f.engineFlags.validate(); err != nil {
		return err
	}
	if f.Stderr == protocol.StderrSeparate && f.Format == "json" {
		return fmt.Errorf("--stderr %s and --log-format json exclude each other: every line of tether's stderr is then a JSON log record, the job's stderr lines are not", protocol.StderrSeparate)
	}
	if f.Security.IsSet() && (f.Local || f.Docker) {
		return errors.New("--restricted, --run-as-user and --read-only-root apply to Kubernetes pods only, not to --local or --docker")
	}
	if err := f.Security.Validate(); err != nil {
		return err
	}
	if f.Pod.IsSet() && (f.Local || f.Docker) {
		return errors.New("the pod-shaping flags (--cpu, --memory, --requests, --limits, --node-selector, --toleration, --pull-secret, --service-account, --service, --volume, --label, --annotation) apply to Kubernetes pods only")
	}
	if err := f.Pod.Validate(); err != nil {
		return err
	}
	if f.Timeout < 0 || f.TTL < 0 || f.IdleTimeout < 0 || f.AfterTimeout < 0 {
		return errors.New("--timeout, --after-timeout, --ttl and --idle-timeout must not be negative")
	}
	var err error
	if f.Scripts, err = scriptPaths(pos); err != nil {
		return err
	}
	after, err := scriptPaths(f.After)
	if err != nil {
		return err
	}
	f.After = after
	return nil
}

// scriptPaths returns the absolute paths of the scripts, which must be
// readable regular files.
func scriptPaths(paths []string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if p == "" {
			return nil, errors.New("empty script path")
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("script %s: %w", p, err)
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("script %s is not a regular file", p)
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("script %s: %w", p, err)
		}
		out = append(out, abs)
	}
	return out, nil
}
