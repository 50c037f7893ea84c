package kube

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tether-ci/tether/internal/version"
)

// ConfigOptions are kubectl's connection flags.
type ConfigOptions struct {
	// Kubeconfig is an explicit kubeconfig file (--kubeconfig); "" follows
	// $KUBECONFIG, then ~/.kube/config, then the in-cluster configuration.
	Kubeconfig string
	// Context is the kubeconfig context to use (--context); "" uses the
	// current context.
	Context string
	// Namespace overrides the context's namespace (-n).
	Namespace string
	// UserAgent is the User-Agent of every request made with the
	// configuration (API calls, attach upgrades over WebSocket and SPDY,
	// pods/log); "" is Tether's own, "tether/VERSION (OS/ARCH)".
	UserAgent string
}

// LoadConfig returns the API server configuration and the namespace the
// way kubectl finds them: --kubeconfig, else $KUBECONFIG (a list of files),
// else ~/.kube/config, else the in-cluster service account; --context and
// -n override the kubeconfig. The namespace falls back to the context's,
// the service account's, then "default".
func LoadConfig(o ConfigOptions) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.Context}
	overrides.Context.Namespace = o.Namespace
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("load Kubernetes client configuration (set --kubeconfig, $KUBECONFIG or run in a pod): %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("find the Kubernetes namespace (set -n): %w", err)
	}
	if ns == "" {
		ns = "default"
	}
	// Attach streams and watches are long-lived: no per-request timeout
	// from the kubeconfig applies to them, but a tighter rate limit than
	// client-go's default would slow reconnects down.
	if cfg.QPS == 0 {
		cfg.QPS = 50
	}
	if cfg.Burst == 0 {
		cfg.Burst = 100
	}
	// Set here, not left to client-go's REST default: the transport
	// wrappers that the attach upgrades go through add only the
	// configured one.
	cfg.UserAgent = o.UserAgent
	if cfg.UserAgent == "" {
		cfg.UserAgent = version.UserAgent("")
	}
	return cfg, ns, nil
}
