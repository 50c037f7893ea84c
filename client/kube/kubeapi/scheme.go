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
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, policyv1.AddToScheme, authorizationv1.AddToScheme, authenticationv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			// The groups' own registration functions fail only on a
			// programming error (a type registered twice differently).
			panic("kubeapi: register an API group: " + err.Error())
		}
	}
	return &codecs{scheme: s, factory: serializer.NewCodecFactory(s), params: runtime.NewParameterCodec(s)}
})

// ParameterCodec encodes the options of the API groups Interface covers
// (metav1 list/get/create options, corev1.PodAttachOptions,
// corev1.PodLogOptions...) as query parameters, for
// rest.Request.VersionedParams.
func ParameterCodec() runtime.ParameterCodec { return sharedCodecs().params }
