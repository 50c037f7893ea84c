package gitlab

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/client/kube/kubeapi"
	gitlab "github.com/tether-ci/tether/integration/gitlab/internal/runnerapi"
)

// accessCheckTimeout bounds prepare's permission check.
const accessCheckTimeout = 15 * time.Second

// accessReport is what the driver's identity may not do in the jobs'
// namespace (gitlab.Access).
type accessReport struct {
	// User is the identity the API server sees ("" when it would not say).
	User string
	// Namespace is the jobs' namespace.
	Namespace string
	// Required and Optional are the missing permissions.
	Required, Optional []gitlab.Permission
}

// checkGitlabAccess asks the API server whether the driver's identity may
// do everything in gitlab.Access in namespace ns: first its rules there in
// one SelfSubjectRulesReview, which is the whole answer when they cover
// everything; else a SelfSubjectAccessReview per verb (which every
// authenticated identity may create), asked concurrently, and who the
// identity is, for the message. An error means the API server gave no
// answer (the commands themselves then fail with what they could not do).
func checkGitlabAccess(ctx context.Context, cs kubeapi.Interface, ns string) (accessReport, error) {
	ctx, cancel := context.WithTimeout(ctx, accessCheckTimeout)
	defer cancel()
	rep := accessReport{Namespace: ns}
	if rulesAllowAll(ctx, cs, ns) {
		return rep, nil
	}
	type answer struct {
		allowed bool
		err     error
	}
	answers := make([][]answer, len(gitlab.Access))
	var wg sync.WaitGroup
	for i, p := range gitlab.Access {
		answers[i] = make([]answer, len(p.Verbs))
		resource, sub, _ := strings.Cut(p.Resource, "/")
		for j, verb := range p.Verbs {
			wg.Go(func() {
				r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{
					Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{
						Namespace: ns, Verb: verb, Group: p.Group, Resource: resource, Subresource: sub,
					}},
				}, metav1.CreateOptions{})
				if err == nil {
					answers[i][j] = answer{allowed: r.Status.Allowed}
				} else {
					answers[i][j] = answer{err: err}
				}
			})
		}
	}
	wg.Go(func() {
		if r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{}); err == nil {
			rep.User = r.Status.UserInfo.Username
		}
	})
	wg.Wait()
	for i, p := range gitlab.Access {
		allowed := false
		for _, a := range answers[i] {
			if a.err != nil {
				return rep, fmt.Errorf("ask the API server whether the runner may %s %s: %w", strings.Join(p.Verbs, " or "), p.Resource, a.err)
			}
			allowed = allowed || a.allowed
		}
		switch {
		case allowed:
		case p.Required:
			rep.Required = append(rep.Required, p)
		default:
			rep.Optional = append(rep.Optional, p)
		}
	}
	return rep, nil
}

// who names the identity for a message.
func (r accessReport) who() string {
	if r.User == "" {
		return "the runner's Kubernetes identity"
	}
	return "the runner's Kubernetes identity " + r.User
}

// missing lists permissions as "get or create pods/attach (why)",
// those of one resource and purpose together ("list and watch events").
func missing(ps []gitlab.Permission) string {
	var parts []string
	for i := 0; i < len(ps); {
		var verbs []string
		j := i
		for ; j < len(ps) && ps[j].Resource == ps[i].Resource && ps[j].For == ps[i].For; j++ {
			verbs = append(verbs, strings.Join(ps[j].Verbs, " or "))
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s)", strings.Join(verbs, " and "), ps[i].Resource, ps[i].For))
		i = j
	}
	return strings.Join(parts, "; ")
}

// requiredCount is how many of gitlab.Access are required.
func requiredCount() int {
	n := 0
	for _, p := range gitlab.Access {
		if p.Required {
			n++
		}
	}
	return n
}

// Err is the system failure for missing required permissions (nil when
// none are missing): what is missing, what for, and how to grant it.
func (r accessReport) Err() error {
	if len(r.Required) == 0 {
		return nil
	}
	if len(r.Required) == requiredCount() {
		// Nothing at all: most likely the wrong namespace, or no binding.
		return fmt.Errorf("%s may not create, get or delete pods, nor attach to them or read their logs, in namespace %s: is %s the jobs' namespace (namespace: in the driver config)? If so, bind the identity to the Role of %s there",
			r.who(), r.Namespace, r.Namespace, gitlab.RBACFile)
	}
	return fmt.Errorf("%s may not %s in namespace %s. Bind it to the Role of %s in namespace %s, or set namespace: in the driver config if %s is not the jobs' namespace",
		r.who(), missing(r.Required), r.Namespace, gitlab.RBACFile, r.Namespace, r.Namespace)
}

// Warning is a line for the job log about missing optional permissions
// ("" when none are missing).
func (r accessReport) Warning() string {
	if len(r.Optional) == 0 {
		return ""
	}
	return fmt.Sprintf("%s may not %s in namespace %s; the Role of %s grants it", r.who(), missing(r.Optional), r.Namespace, gitlab.RBACFile)
}
