package runnerapi

import (
	"fmt"
	"strings"
)

// Pull policies as .gitlab-ci.yml names them (image:pull_policy), with the
// Kubernetes policy each stands for.
var pullPolicies = map[string]string{
	"always":         "Always",
	"if-not-present": "IfNotPresent",
	"never":          "Never",
}

// NormalizePullPolicy returns the Kubernetes name (Always, IfNotPresent,
// Never) of a pull policy given in either spelling (GitLab's always,
// if-not-present, never, or Kubernetes' own), or an error naming the
// accepted ones.
func NormalizePullPolicy(p string) (string, error) {
	if k, ok := pullPolicies[p]; ok {
		return k, nil
	}
	for _, k := range pullPolicies {
		if p == k {
			return k, nil
		}
	}
	return "", fmt.Errorf("pull policy %q: want always, if-not-present or never (or Always, IfNotPresent, Never)", p)
}

// JobPullPolicy returns the Kubernetes pull policy for an image whose
// pull_policy (from .gitlab-ci.yml) is asked, "" when it asks none (the
// driver's own setting then applies). As GitLab Runner's Kubernetes
// executor does, a job may only use policies the runner allows: the first
// policy asked that allowed (Kubernetes names) holds is used, and an error
// says what was asked and what is allowed when none is. what names the
// image in that error ("the job's image", "service postgres").
func JobPullPolicy(asked, allowed []string, what string) (string, error) {
	if len(asked) == 0 {
		return "", nil
	}
	var want []string
	for _, p := range asked {
		k, err := NormalizePullPolicy(p)
		if err != nil {
			return "", fmt.Errorf("%s: pull_policy in .gitlab-ci.yml: %w", what, err)
		}
		want = append(want, k)
	}
	for _, k := range want {
		for _, a := range allowed {
			if a == k {
				return k, nil
			}
		}
	}
	if len(allowed) == 0 {
		return "", fmt.Errorf("%s: pull_policy %s in .gitlab-ci.yml, but the driver config allows no pull policy for jobs to choose: set allowed-pull-policies (or pull-policy) in the driver config, or remove pull_policy from the job",
			what, strings.Join(asked, ", "))
	}
	return "", fmt.Errorf("%s: pull_policy %s in .gitlab-ci.yml is not one of the driver config's allowed-pull-policies (%s): allow it there, or change the job",
		what, strings.Join(asked, ", "), strings.Join(allowed, ", "))
}
