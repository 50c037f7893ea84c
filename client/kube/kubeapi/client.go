package kubeapi

import (
	"fmt"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// Clientset is Interface over client-go's rest client: one rest client
// per API group, all sharing one http.Client.
type Clientset struct {
	core, policy, authorization, authentication rest.Interface
	codecs                                      *codecs
}

var _ Interface = (*Clientset)(nil)

// New returns a Clientset for config, as kubernetes.NewForConfig does:
// config's User-Agent (client-go's default when empty), JSON on the wire.
func New(config *rest.Config) (*Clientset, error) {
	c := *config
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	h, err := rest.HTTPClientFor(&c)
	if err != nil {
		return nil, fmt.Errorf("kubeapi: build the HTTP client from the rest.Config: %w", err)
	}
	return NewForConfigAndClient(&c, h)
}

// NewForConfigAndClient returns a Clientset for config whose requests go
// through h (shared with other clients of the same config).
func NewForConfigAndClient(config *rest.Config, h *http.Client) (*Clientset, error) {
	cs := &Clientset{codecs: sharedCodecs()}
	for _, g := range []struct {
		client  *rest.Interface
		gv      schema.GroupVersion
		apiPath string
	}{
		{&cs.core, corev1.SchemeGroupVersion, "/api"},
		{&cs.policy, policyv1.SchemeGroupVersion, "/apis"},
		{&cs.authorization, authorizationv1.SchemeGroupVersion, "/apis"},
		{&cs.authentication, authenticationv1.SchemeGroupVersion, "/apis"},
	} {
		c := *config
		gv := g.gv
		c.GroupVersion = &gv
		c.APIPath = g.apiPath
		c.NegotiatedSerializer = cs.codecs.factory.WithoutConversion()
		if c.UserAgent == "" {
			c.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		rc, err := rest.RESTClientForConfigAndClient(&c, h)
		if err != nil {
			return nil, fmt.Errorf("kubeapi: build the %s client: %w", gv, err)
		}
		*g.client = rc
	}
	return cs, nil
}

// CoreV1 is the core/v1 API group.
func (cs *Clientset) CoreV1() CoreV1Interface { return coreV1{group{cs.core, cs.codecs.params}} }

// PolicyV1 is the policy/v1 API group.
func (cs *Clientset) PolicyV1() PolicyV1Interface {
	return policyV1{group{cs.policy, cs.codecs.params}}
}

// AuthorizationV1 is the authorization/v1 API group.
func (cs *Clientset) AuthorizationV1() AuthorizationV1Interface {
	return authorizationV1{group{cs.authorization, cs.codecs.params}}
}

// AuthenticationV1 is the authentication/v1 API group.
func (cs *Clientset) AuthenticationV1() AuthenticationV1Interface {
	return authenticationV1{group{cs.authentication, cs.codecs.params}}
}
