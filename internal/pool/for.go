package pool

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/gitlabpod"
	"github.com/tether-ci/tether/settings"
)

// Which jobs claim a pool's pods (key for): each integration shapes its
// job pods its own way, and a job claims only a pod shaped as its own
// (kube.PoolHash).
const (
	// ForRun: jobs of `tether run --pool` (the default).
	ForRun = "run"
	// ForGitLab: jobs of `tether gitlab` with its pool setting; the pods
	// have the driver's shape (gitlabpod.Shape) from the GitLab keys.
	ForGitLab = "gitlab"
	// ForActions: jobs of `tether actions` with TETHER_ACTIONS_POOL; the
	// pods have the hook's shape (actionspod.Shape) from the Actions keys.
	ForActions = "actions"
)

// GitLab are the keys of a pool for GitLab jobs, named and meaning as
// `tether gitlab`'s settings of the same names.
type GitLab struct {
	// HelperImage is the helper container's image (key
	// gitlab-helper-image), as the driver expands it for the jobs (no
	// ${…}), or "none". Required.
	HelperImage string
	// HelperResources are the helper container's (gitlab-helper-cpu, …).
	HelperResources settings.Resources
	// BuildsDir and CacheDir are the driver's builds-dir and cache-dir.
	BuildsDir, CacheDir string
}

// gitlabKeys are the keys of a pool for GitLab jobs only.
var gitlabKeys = []string{"gitlab-helper-image", "gitlab-helper-cpu", "gitlab-helper-memory", "gitlab-helper-requests", "gitlab-helper-limits", "builds-dir", "cache-dir"}

// securityKeys are `tether run`'s keys the GitLab driver and the Actions
// hook have not.
var securityKeys = []string{"restricted", "run-as-user", "read-only-root"}

// pullPolicyKeys are the keys of the integrations that set one pull
// policy on every image of the pod (GitLab, Actions).
var pullPolicyKeys = []string{"pull-policy"}

// addFlags registers the GitLab keys on fs.
func (g *GitLab) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&g.HelperImage, "gitlab-helper-image", "", "for: gitlab: the helper container's image as the driver gives it to the pool's jobs (no ${…}), or none (required)")
	g.HelperResources.AddFlags(fs, "gitlab-helper-", "the helper container (for: gitlab)")
	fs.StringVar(&g.BuildsDir, "builds-dir", gitlabpod.DefaultBuildsDir, "for: gitlab: the driver's builds-dir")
	fs.StringVar(&g.CacheDir, "cache-dir", gitlabpod.DefaultCacheDir, "for: gitlab: the driver's cache-dir")
}

// checkKeys refuses keys that do not belong to the pool's kind: fs is
// the pool's FlagSet after its values were set.
func (p *Pool) checkKeys(fs *pflag.FlagSet) error {
	var other []string
	switch p.For {
	case ForGitLab:
		other = concat(securityKeys, actionsKeys)
	case ForActions:
		other = concat(securityKeys, gitlabKeys)
	default:
		other = concat(gitlabKeys, actionsKeys, pullPolicyKeys)
	}
	for _, k := range other {
		if fs.Changed(k) {
			return fmt.Errorf("key %q has no meaning in a pool for %s jobs (key for: %s)", k, cmpOr(p.For, ForRun), cmpOr(p.For, ForRun))
		}
	}
	return nil
}

func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// validate checks the GitLab keys as the driver checks its own.
func (g *GitLab) validate() error {
	switch {
	case g.HelperImage == "":
		return errors.New("no gitlab-helper-image: a pool for gitlab jobs needs the helper image the driver gives its jobs (gitlab-runner-helper's, with the runner's version), or none")
	case strings.Contains(g.HelperImage, "${"):
		return fmt.Errorf("gitlab-helper-image %q: write the image as the driver expands it for the jobs (the runner's version in place of ${…})", g.HelperImage)
	}
	for name, dir := range map[string]string{"builds-dir": g.BuildsDir, "cache-dir": g.CacheDir} {
		if !strings.HasPrefix(dir, "/") {
			return fmt.Errorf("%s %q must be an absolute path", name, dir)
		}
	}
	return nil
}

// validatePullPolicy checks the pull-policy key.
func validatePullPolicy(policy string) error {
	switch corev1.PullPolicy(policy) {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
		return nil
	}
	return fmt.Errorf("pull-policy %q: want Always, IfNotPresent or Never", policy)
}

// shape returns the driver's shape of the pool's pods.
func (g *GitLab) shape(pullPolicy string) (gitlabpod.Shape, error) {
	sh := gitlabpod.Shape{BuildsDir: g.BuildsDir, CacheDir: g.CacheDir, PullPolicy: corev1.PullPolicy(pullPolicy)}
	if g.HelperImage != "none" {
		res, err := g.HelperResources.Requirements()
		if err != nil {
			return sh, err
		}
		sh.Helper = &kube.Helper{Image: g.HelperImage, Resources: res}
	}
	return sh, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
