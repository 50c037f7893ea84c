package kubeapi

import (
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// codecs is the scheme of the API groups Interface covers, its codec
// factory and parameter codec: built at the first client, not when the
// program starts, and never changed after.
type codecs struct {
	scheme  *runtime.Scheme
	factory serializer.CodecFactory
	params  runtime.ParameterCodec
}

var sharedCodecs = sync.OnceValue(func() *codecs {
	s := runtime.NewScheme()
	// The unversioned meta types (Status, WatchEvent, the options), as
	// client-go's scheme registers them.
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	// Only the kinds Interface reads and writes, with each group's
	// options: registering whole groups (the core group alone has about
	// 70 kinds) costs the first client a few milliseconds more.
	for gv, kinds := range map[schema.GroupVersion][]runtime.Object{
		corev1.SchemeGroupVersion: {
			&corev1.Pod{}, &corev1.PodList{}, &corev1.PodLogOptions{}, &corev1.PodAttachOptions{},
			&corev1.Event{}, &corev1.EventList{}, &corev1.Secret{}, &corev1.SecretList{},
			&corev1.ConfigMap{}, &corev1.ConfigMapList{}, &corev1.Node{}, &corev1.NodeList{},
		},
		policyv1.SchemeGroupVersion: {&policyv1.PodDisruptionBudget{}, &policyv1.PodDisruptionBudgetList{}},
		authorizationv1.SchemeGroupVersion: {
			&authorizationv1.SelfSubjectAccessReview{}, &authorizationv1.SelfSubjectRulesReview{},
		},
		authenticationv1.SchemeGroupVersion: {&authenticationv1.SelfSubjectReview{}},
	} {
		s.AddKnownTypes(gv, kinds...)
		metav1.AddToGroupVersion(s, gv)
	}
	return &codecs{scheme: s, factory: serializer.NewCodecFactory(s), params: runtime.NewParameterCodec(s)}
})

// ParameterCodec encodes the options of the API groups Interface covers
// (metav1 list/get/create options, corev1.PodAttachOptions,
// corev1.PodLogOptions...) as query parameters, for
// rest.Request.VersionedParams.
func ParameterCodec() runtime.ParameterCodec { return sharedCodecs().params }
