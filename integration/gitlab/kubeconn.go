package gitlab

import (
	"github.com/tether-ci/tether/client/kube/kubeapi"
	"k8s.io/client-go/rest"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/cmdutil"
	"github.com/tether-ci/tether/internal/version"
)

// kubeConn is the driver's Kubernetes client configuration and clientset
// for the settings that chose them: every process builds one, the stage
// agent one for all of its job's stages.
type kubeConn struct {
	rc *rest.Config
	ns string
	cs kubeapi.Interface
	// kubeconfig, context and namespace are the settings it was built for.
	kubeconfig, context, namespace string
}

// newKubeConn loads the client configuration cfg names (the kubectl way)
// and builds its clientset, with the driver's User-Agent.
func newKubeConn(cfg *Settings) (*kubeConn, error) {
	rc, ns, cs, err := cmdutil.KubeClients(kube.ConfigOptions{Kubeconfig: cfg.Kubeconfig, Context: cfg.Context, Namespace: cfg.Namespace, UserAgent: version.UserAgent("gitlab")})
	if err != nil {
		return nil, err
	}
	return &kubeConn{rc: rc, ns: ns, cs: cs, kubeconfig: cfg.Kubeconfig, context: cfg.Context, namespace: cfg.Namespace}, nil
}

// serves reports whether k is what cfg's settings would build.
func (k *kubeConn) serves(cfg *Settings) bool {
	return k.kubeconfig == cfg.Kubeconfig && k.context == cfg.Context && k.namespace == cfg.Namespace
}
