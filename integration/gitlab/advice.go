package gitlab

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/tether-ci/tether/client/kube"
	gitlab "github.com/tether-ci/tether/integration/gitlab/internal/runnerapi"
)

// apiAdvice is what to do about an API request the server refused (err)
// for lack of permission or credentials, "" for any other error.
func apiAdvice(err error) string {
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Sprintf(" (bind the runner's identity to the Role of %s in this namespace)", gitlab.RBACFile)
	case apierrors.IsUnauthorized(err):
		return " (the API server refused the runner's credentials: the token or certificate of its kubeconfig is wrong or has expired; " +
			"tokens of `kubectl create token` expire within hours: docs/gitlab.md shows a long-lived one)"
	}
	return ""
}

// unreachable reports whether err (from a request to the API server) is
// not an answer of it: it could not be reached, or its certificate was
// refused.
func unreachable(err error) bool {
	var status apierrors.APIStatus
	return err != nil && !errors.As(err, &status)
}

// quotaAdvice is what to change in the driver config when a ResourceQuota
// refused the job's pod (err from creating it), "" for any other error.
// The API server's message says which containers lack requests or limits,
// or what the pod asked for and what is left; this names the settings.
func quotaAdvice(err error) string {
	msg := err.Error()
	if !apierrors.IsForbidden(err) || !strings.Contains(msg, "quota") {
		return ""
	}
	switch {
	case strings.Contains(msg, "exceeded quota"):
		return ". The namespace's ResourceQuota has not enough left for this pod (requested, used and limited above): " +
			"give the containers less (cpu, memory, gitlab-helper-cpu, gitlab-helper-memory, service-cpu, service-memory), " +
			"raise the quota, or run fewer jobs at once (limit = in config.toml); the system failure makes the runner try again"
	case strings.Contains(msg, "must specify"):
		_, containers, _ := strings.Cut(msg, "must specify")
		var set []string
		if strings.Contains(containers, kube.BuildContainer) || strings.Contains(containers, kube.InitContainer) {
			set = append(set, "cpu and memory (the build container; "+kube.InitContainer+" takes the same)")
		}
		if strings.Contains(containers, kube.HelperContainer) {
			set = append(set, "gitlab-helper-cpu and gitlab-helper-memory (the helper container)")
		}
		if strings.Contains(containers, kube.ServicePrefix) {
			set = append(set, "service-cpu and service-memory (the services)")
		}
		if len(set) == 0 {
			set = []string{"cpu and memory, gitlab-helper-cpu and gitlab-helper-memory, service-cpu and service-memory"}
		}
		return ". The namespace's ResourceQuota demands requests and limits on every container: set " +
			strings.Join(set, ", ") + " in the driver config (or the -requests/-limits forms of them)"
	}
	return ""
}

// pullAdvice names the setting behind the image that could not be pulled
// (err from waiting for the job's pod: a *kube.ImagePullError), "" for
// any other error.
func pullAdvice(err error, spec kube.Spec) string {
	var pull *kube.ImagePullError
	if !errors.As(err, &pull) {
		return ""
	}
	switch c := pull.Container; {
	case c == kube.InitContainer:
		return fmt.Sprintf(". %s is helper-image, the tether-shim image of the driver's version: mirror it into a registry the nodes can pull from, or import it on each node (docs/images.md), and set helper-image to it", spec.HelperImage)
	case spec.Helper != nil && c == kube.HelperContainer:
		return fmt.Sprintf(". %s is gitlab-helper-image (git and gitlab-runner-helper for sources, caches and artifacts; the default is GitLab's registry.gitlab.com image): set it to an image the nodes can pull, or %q to run every stage in the build container", spec.Helper.Image, gitlabNoHelper)
	case c == kube.BuildContainer:
		return fmt.Sprintf(". %s is the job's image (image: in .gitlab-ci.yml, else image: of the driver config): check its name, and pull-secret for a private registry", spec.Image)
	case strings.HasPrefix(c, kube.ServicePrefix):
		return ". It is one of the job's services (services: in .gitlab-ci.yml): check its name, and pull-secret for a private registry"
	}
	return ""
}
