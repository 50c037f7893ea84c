// Package clientset adapts client-go's typed clientset
// (kubernetes.Interface, the real one or client-go's fake) to
// kubeapi.Interface, for programs that already hold one and for tests.
// It links the typed clientset: the tether binary does not use it.
package clientset

import (
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tether-ci/tether/client/kube/kubeapi"
)

// Wrap returns cs as a kubeapi.Interface: every call goes to cs.
func Wrap(cs kubernetes.Interface) kubeapi.Interface { return wrapped{cs} }

type wrapped struct{ cs kubernetes.Interface }

func (w wrapped) CoreV1() kubeapi.CoreV1Interface { return coreV1(w) }

func (w wrapped) PolicyV1() kubeapi.PolicyV1Interface { return policyV1(w) }

func (w wrapped) AuthorizationV1() kubeapi.AuthorizationV1Interface { return authorizationV1(w) }

func (w wrapped) AuthenticationV1() kubeapi.AuthenticationV1Interface { return authenticationV1(w) }

type coreV1 struct{ cs kubernetes.Interface }

func (c coreV1) RESTClient() rest.Interface { return c.cs.CoreV1().RESTClient() }

func (c coreV1) Pods(namespace string) kubeapi.PodInterface { return c.cs.CoreV1().Pods(namespace) }

func (c coreV1) Events(namespace string) kubeapi.EventInterface {
	return c.cs.CoreV1().Events(namespace)
}

func (c coreV1) Secrets(namespace string) kubeapi.SecretInterface {
	return c.cs.CoreV1().Secrets(namespace)
}

func (c coreV1) ConfigMaps(namespace string) kubeapi.ConfigMapInterface {
	return c.cs.CoreV1().ConfigMaps(namespace)
}

func (c coreV1) Nodes() kubeapi.NodeInterface { return c.cs.CoreV1().Nodes() }

type policyV1 struct{ cs kubernetes.Interface }

func (p policyV1) PodDisruptionBudgets(namespace string) kubeapi.PodDisruptionBudgetInterface {
	return p.cs.PolicyV1().PodDisruptionBudgets(namespace)
}

type authorizationV1 struct{ cs kubernetes.Interface }

func (a authorizationV1) SelfSubjectAccessReviews() kubeapi.SelfSubjectAccessReviewInterface {
	return a.cs.AuthorizationV1().SelfSubjectAccessReviews()
}

func (a authorizationV1) SelfSubjectRulesReviews() kubeapi.SelfSubjectRulesReviewInterface {
	return a.cs.AuthorizationV1().SelfSubjectRulesReviews()
}

type authenticationV1 struct{ cs kubernetes.Interface }

func (a authenticationV1) SelfSubjectReviews() kubeapi.SelfSubjectReviewInterface {
	return a.cs.AuthenticationV1().SelfSubjectReviews()
}
