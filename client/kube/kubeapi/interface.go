package kubeapi

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// Interface is the Kubernetes API Tether uses, by API group, as
// client-go's kubernetes.Interface has it.
type Interface interface {
	CoreV1() CoreV1Interface
	PolicyV1() PolicyV1Interface
	AuthorizationV1() AuthorizationV1Interface
	AuthenticationV1() AuthenticationV1Interface
}

// CoreV1Interface is the core/v1 API group's part Tether uses.
type CoreV1Interface interface {
	// RESTClient is the group's rest client (pods/attach URLs).
	RESTClient() rest.Interface
	PodsGetter
	EventsGetter
	SecretsGetter
	ConfigMapsGetter
	NodesGetter
}

// PodsGetter returns the pods of a namespace.
type PodsGetter interface {
	Pods(namespace string) PodInterface
}

// PodInterface reads and writes the pods of one namespace.
type PodInterface interface {
	Create(ctx context.Context, pod *corev1.Pod, opts metav1.CreateOptions) (*corev1.Pod, error)
	Update(ctx context.Context, pod *corev1.Pod, opts metav1.UpdateOptions) (*corev1.Pod, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Pod, error)
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	// UpdateEphemeralContainers writes the pod's ephemeral containers
	// (the pods/ephemeralcontainers subresource).
	UpdateEphemeralContainers(ctx context.Context, podName string, pod *corev1.Pod, opts metav1.UpdateOptions) (*corev1.Pod, error)
	// GetLogs is the request for a container's log (pods/log).
	GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request
}

// EventsGetter returns the events of a namespace.
type EventsGetter interface {
	Events(namespace string) EventInterface
}

// EventInterface reads and writes the core/v1 events of one namespace.
type EventInterface interface {
	Create(ctx context.Context, event *corev1.Event, opts metav1.CreateOptions) (*corev1.Event, error)
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.EventList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// SecretsGetter returns the secrets of a namespace.
type SecretsGetter interface {
	Secrets(namespace string) SecretInterface
}

// SecretInterface reads and writes the secrets of one namespace.
type SecretInterface interface {
	Create(ctx context.Context, secret *corev1.Secret, opts metav1.CreateOptions) (*corev1.Secret, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Update(ctx context.Context, secret *corev1.Secret, opts metav1.UpdateOptions) (*corev1.Secret, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error)
}

// ConfigMapsGetter returns the config maps of a namespace.
type ConfigMapsGetter interface {
	ConfigMaps(namespace string) ConfigMapInterface
}

// ConfigMapInterface writes the config maps of one namespace.
type ConfigMapInterface interface {
	Create(ctx context.Context, configMap *corev1.ConfigMap, opts metav1.CreateOptions) (*corev1.ConfigMap, error)
}

// NodesGetter returns the nodes.
type NodesGetter interface {
	Nodes() NodeInterface
}

// NodeInterface reads nodes.
type NodeInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Node, error)
}

// PolicyV1Interface is the policy/v1 API group's part Tether uses.
type PolicyV1Interface interface {
	PodDisruptionBudgets(namespace string) PodDisruptionBudgetInterface
}

// PodDisruptionBudgetInterface writes the pod disruption budgets of one
// namespace.
type PodDisruptionBudgetInterface interface {
	Create(ctx context.Context, podDisruptionBudget *policyv1.PodDisruptionBudget, opts metav1.CreateOptions) (*policyv1.PodDisruptionBudget, error)
}

// AuthorizationV1Interface is the authorization/v1 API group's part
// Tether uses.
type AuthorizationV1Interface interface {
	SelfSubjectAccessReviews() SelfSubjectAccessReviewInterface
	SelfSubjectRulesReviews() SelfSubjectRulesReviewInterface
}

// SelfSubjectAccessReviewInterface asks what the client may do.
type SelfSubjectAccessReviewInterface interface {
	Create(ctx context.Context, selfSubjectAccessReview *authorizationv1.SelfSubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SelfSubjectAccessReview, error)
}

// SelfSubjectRulesReviewInterface asks for the client's rules in a
// namespace.
type SelfSubjectRulesReviewInterface interface {
	Create(ctx context.Context, selfSubjectRulesReview *authorizationv1.SelfSubjectRulesReview, opts metav1.CreateOptions) (*authorizationv1.SelfSubjectRulesReview, error)
}

// AuthenticationV1Interface is the authentication/v1 API group's part
// Tether uses.
type AuthenticationV1Interface interface {
	SelfSubjectReviews() SelfSubjectReviewInterface
}

// SelfSubjectReviewInterface asks who the client is.
type SelfSubjectReviewInterface interface {
	Create(ctx context.Context, selfSubjectReview *authenticationv1.SelfSubjectReview, opts metav1.CreateOptions) (*authenticationv1.SelfSubjectReview, error)
}
