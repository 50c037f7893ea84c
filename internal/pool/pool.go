package pool

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/contract"
	"github.com/tether-ci/tether/settings"
)

// Defaults of a pool's own keys.
const (
	// DefaultSize is the number of warm pods a pool keeps ready when the
	// file does not say.
	DefaultSize = 1
	// DefaultMaxIdle is how long a warm pod waits for a job before it is
	// replaced when the file does not say.
	DefaultMaxIdle = 30 * time.Minute
)

// Pool is one pool of the file: its own keys and the pod settings of its
// warm pods.
type Pool struct {
	// Name names the pool (key name): a DNS label, carried by its warm
	// pods in a label, and what `tether run --pool` asks for.
	Name string
	// Size is how many unclaimed warm pods the controller keeps (key size).
	Size int
	// MaxIdle is how long a warm pod may wait for a job (key max-idle):
	// the controller replaces older ones, and a warm pod without a
	// controller ends itself after it.
	MaxIdle time.Duration
	// Image is the build container's image (key image). Required.
	Image string
	// HelperImage carries tether-shim (key helper-image).
	HelperImage string
	// For says whose jobs claim the pool's pods (key for): ForRun (""
	// too) or ForGitLab.
	For string
	// PullPolicy is the pull policy of every image of the pods (key
	// pull-policy; GitLab and Actions pools, "" Kubernetes').
	PullPolicy string
	// GitLab are the keys of a pool for GitLab jobs.
	GitLab GitLab
	// Actions are the keys of a pool for GitHub Actions jobs.
	Actions Actions

	// The pod settings, under the keys of `tether run`'s flags.
	settings.Pod
	settings.Security
}

// NewFlagSet returns the FlagSet whose long flag names are the keys of a
// pool, bound to p, with their defaults.
func NewFlagSet(p *Pool) *pflag.FlagSet {
	fs := pflag.NewFlagSet("tether pool", pflag.ContinueOnError)
	fs.StringVar(&p.Name, "name", "", "the pool's `NAME` (a DNS label): warm pods carry it, `tether run --pool NAME` asks for it")
	fs.IntVar(&p.Size, "size", DefaultSize, "warm pods to keep ready")
	fs.DurationVar(&p.MaxIdle, "max-idle", DefaultMaxIdle, "a warm pod older than this is replaced; without the controller it ends itself after it")
	fs.StringVar(&p.Image, "image", "", "image of the build container (required)")
	fs.StringVar(&p.HelperImage, "helper-image", contract.DefaultHelperImage(), "image that carries tether-shim")
	fs.StringVar(&p.For, "for", ForRun, "whose jobs claim the pool's pods: run (tether run --pool), gitlab (tether gitlab's pool setting; the pods get the driver's shape from the gitlab-… keys) or actions (tether actions' TETHER_ACTIONS_POOL; the hook's shape from the actions-… keys)")
	fs.StringVar(&p.PullPolicy, "pull-policy", "", "for: gitlab or actions: the pull policy of every image of the pods (the driver's pull-policy, the hook's TETHER_ACTIONS_PULL_POLICY): Always, IfNotPresent or Never")
	p.Pod.AddFlags(fs)
	p.Security.AddFlags(fs)
	p.GitLab.addFlags(fs)
	p.Actions.addFlags(fs)
	return fs
}

// Validate checks the pool's own keys and its pod settings as `tether
// run` checks them; errors name the key's flag.
func (p *Pool) Validate() error {
	if p.Name == "" {
		return errors.New("no name: every pool needs a name (key name)")
	}
	if errs := validation.IsDNS1123Label(p.Name); len(errs) > 0 {
		return fmt.Errorf("--name %q is not a DNS label (it goes into a label of the warm pods): %s", p.Name, strings.Join(errs, "; "))
	}
	if p.Image == "" {
		return errors.New("no image: every pool needs the image of its build container (key image)")
	}
	if p.Size < 0 {
		return fmt.Errorf("--size %d must not be negative (0 keeps no warm pod)", p.Size)
	}
	if p.MaxIdle <= 0 {
		return fmt.Errorf("--max-idle %s must be positive: a warm pod that waits forever holds its resources forever", p.MaxIdle)
	}
	switch p.For {
	case "", ForRun:
	case ForGitLab:
		if err := p.GitLab.validate(); err != nil {
			return err
		}
	case ForActions:
		if err := p.Actions.validate(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("--for %q: want %s, %s or %s", p.For, ForRun, ForGitLab, ForActions)
	}
	if err := validatePullPolicy(p.PullPolicy); err != nil {
		return err
	}
	if err := p.Security.Validate(); err != nil {
		return err
	}
	if err := p.Pod.Validate(); err != nil {
		return err
	}
	// What the warm pod's builder refuses (a name too long for its pods'
	// names, a pod patch that breaks Tether's invariants, …).
	spec, err := p.Spec("default")
	if err != nil {
		return err
	}
	if _, err := p.WarmPod(spec); err != nil {
		return err
	}
	return nil
}

// WarmPod returns the objects of one new warm pod of the pool with spec
// (Spec's), as client/kube builds it.
func (p *Pool) WarmPod(spec kube.Spec) (*kube.Objects, error) {
	return kube.WarmPod(spec, kube.WarmOptions{Pool: p.Name, MaxIdle: p.MaxIdle})
}

// Spec returns the kube.Spec of the pool's warm pods in namespace: the
// image, helper image, security and pod settings, as `tether run` sets
// them for a job with the same flags; for GitLab jobs (For), the pod
// settings and the driver's shape, as `tether gitlab` sets them for a
// job with the same settings; for Actions jobs, the hook's shape of a job
// with the pool's image, services and settings. Validate first.
func (p *Pool) Spec(namespace string) (kube.Spec, error) {
	spec := kube.Spec{Namespace: namespace, Image: p.Image, HelperImage: p.HelperImage}
	if p.For == ForGitLab {
		// As `tether gitlab` shapes a job's pod: its pod settings (the
		// services among them), then the driver's own shape.
		if err := p.Pod.ApplyTo(&spec); err != nil {
			return kube.Spec{}, err
		}
		sh, err := p.GitLab.shape(p.PullPolicy)
		if err != nil {
			return kube.Spec{}, err
		}
		sh.Apply(&spec)
		return spec, nil
	}
	if p.For == ForActions {
		// As `tether actions` shapes a job's pod before the workflow's
		// container options (actionspod.Shape).
		return p.Actions.shape(p, namespace).Spec()
	}
	p.Security.ApplyTo(&spec)
	if err := p.Pod.ApplyTo(&spec); err != nil {
		return kube.Spec{}, err
	}
	return spec, nil
}
