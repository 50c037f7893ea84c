package kubeapi

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// group is one API group's rest client and the parameter codec.
type group struct {
	client rest.Interface
	params runtime.ParameterCodec
}

func resourceOf[T object, L runtime.Object](g group, namespace, name string, newObject func() T, newList func() L) *resource[T, L] {
	return &resource[T, L]{client: g.client, params: g.params, namespace: namespace, name: name, newObject: newObject, newList: newList}
}

type coreV1 struct{ group }

func (g coreV1) RESTClient() rest.Interface { return g.client }

func (g coreV1) Pods(namespace string) PodInterface {
	return pods{resourceOf(g.group, namespace, "pods",
		func() *corev1.Pod { return &corev1.Pod{} }, func() *corev1.PodList { return &corev1.PodList{} })}
}

func (g coreV1) Events(namespace string) EventInterface {
	return resourceOf(g.group, namespace, "events",
		func() *corev1.Event { return &corev1.Event{} }, func() *corev1.EventList { return &corev1.EventList{} })
}

func (g coreV1) Secrets(namespace string) SecretInterface {
	return resourceOf(g.group, namespace, "secrets",
		func() *corev1.Secret { return &corev1.Secret{} }, func() *corev1.SecretList { return &corev1.SecretList{} })
}

func (g coreV1) ConfigMaps(namespace string) ConfigMapInterface {
	return resourceOf(g.group, namespace, "configmaps",
		func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} })
}

func (g coreV1) Nodes() NodeInterface {
	return resourceOf(g.group, "", "nodes",
		func() *corev1.Node { return &corev1.Node{} }, func() *corev1.NodeList { return &corev1.NodeList{} })
}

// pods adds the pods' subresources to the generic resource.
type pods struct {
	*resource[*corev1.Pod, *corev1.PodList]
}

func (p pods) UpdateEphemeralContainers(ctx context.Context, podName string, pod *corev1.Pod, opts metav1.UpdateOptions) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	err := p.request("PUT").Name(podName).SubResource("ephemeralcontainers").
		VersionedParams(&opts, p.params).Body(pod).Do(ctx).Into(out)
	return out, err
}

func (p pods) GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request {
	return p.client.Get().Namespace(p.namespace).Name(name).Resource("pods").SubResource("log").VersionedParams(opts, p.params)
}

type policyV1 struct{ group }

func (g policyV1) PodDisruptionBudgets(namespace string) PodDisruptionBudgetInterface {
	return resourceOf(g.group, namespace, "poddisruptionbudgets",
		func() *policyv1.PodDisruptionBudget { return &policyv1.PodDisruptionBudget{} },
		func() *policyv1.PodDisruptionBudgetList { return &policyv1.PodDisruptionBudgetList{} })
}

type authorizationV1 struct{ group }

func (g authorizationV1) SelfSubjectAccessReviews() SelfSubjectAccessReviewInterface {
	return resourceOf(g.group, "", "selfsubjectaccessreviews",
		func() *authorizationv1.SelfSubjectAccessReview { return &authorizationv1.SelfSubjectAccessReview{} },
		func() *authorizationv1.SelfSubjectAccessReview { return nil })
}

func (g authorizationV1) SelfSubjectRulesReviews() SelfSubjectRulesReviewInterface {
	return resourceOf(g.group, "", "selfsubjectrulesreviews",
		func() *authorizationv1.SelfSubjectRulesReview { return &authorizationv1.SelfSubjectRulesReview{} },
		func() *authorizationv1.SelfSubjectRulesReview { return nil })
}

type authenticationV1 struct{ group }

func (g authenticationV1) SelfSubjectReviews() SelfSubjectReviewInterface {
	return resourceOf(g.group, "", "selfsubjectreviews",
		func() *authenticationv1.SelfSubjectReview { return &authenticationv1.SelfSubjectReview{} },
		func() *authenticationv1.SelfSubjectReview { return nil })
}
