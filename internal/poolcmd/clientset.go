package poolcmd

import (
	"fmt"

	"k8s.io/client-go/kubernetes"

	"github.com/tether-ci/tether/client/kube"
)

// typedClientset loads the client configuration the kubectl way and
// builds client-go's typed clientset for it: the controller's informers
// and leader election take one (tether-pool links it; tether does not).
func typedClientset(opts kube.ConfigOptions) (string, kubernetes.Interface, error) {
	cfg, ns, err := kube.LoadConfig(opts)
	if err != nil {
		return "", nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", nil, fmt.Errorf("build a Kubernetes client: %w", err)
	}
	return ns, cs, nil
}
