package actions

import (
	"context"

	"k8s.io/client-go/rest"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi"
	"github.com/tether-ci/tether/integration/actions/hookapi"
	"github.com/tether-ci/tether/internal/cmdutil"
	"github.com/tether-ci/tether/internal/lockedbuf"
	"github.com/tether-ci/tether/internal/version"
)

// cluster is the API server connection of one command.
type cluster struct {
	cfg       *rest.Config
	cs        kubeapi.Interface
	namespace string
}

// Connector makes the API server connection of one command: the REST
// configuration (for attach), the namespace of the job pods and the
// clientset.
type Connector func(kube.ConfigOptions) (*rest.Config, string, kubeapi.Interface, error)

// connect loads the Kubernetes configuration the settings name, through
// h.Connect (cmdutil.KubeClients when nil).
func (h *Hook) connect() (*cluster, error) {
	connect := h.Connect
	if connect == nil {
		connect = func(o kube.ConfigOptions) (*rest.Config, string, kubeapi.Interface, error) {
			return cmdutil.KubeClients(o)
		}
	}
	cfg, ns, cs, err := connect(kube.ConfigOptions{Kubeconfig: h.Settings.Kubeconfig, Namespace: h.Settings.Namespace, UserAgent: version.UserAgent("actions")})
	if err != nil {
		return nil, err
	}
	return &cluster{cfg: cfg, cs: cs, namespace: ns}, nil
}

// pod is the handle of the job's pod named by st.
func (c *cluster) pod(h *Hook, st *hookapi.State) *kube.Pod {
	return &kube.Pod{Client: c.cs, Namespace: st.Namespace, Name: st.Pod, Container: kube.BuildContainer, Logger: h.logger()}
}

// transport is the attach transport of the pod's job container.
func (c *cluster) transport(h *Hook, p *kube.Pod) client.Transport {
	return p.Transport(c.cfg, kube.TransportOptions{Logger: h.logger()})
}

// runHelper runs job, one of the hook's own jobs (a probe, a copy, a
// listing), on the job container's shim of pod, and returns its output
// too: captured, never in the step's log. opts says where its output
// starts (From, FromEnd) and its ReconnectTimeout; the rest is the hook's.
func (c *cluster) runHelper(ctx context.Context, h *Hook, pod *kube.Pod, job client.Job, opts client.Options) (client.Result, []byte, error) {
	return c.runHelperOn(ctx, h, c.transport(h, pod), job, opts)
}

// runHelperOn is runHelper over the transport t of the job container.
func (c *cluster) runHelperOn(ctx context.Context, h *Hook, t client.Transport, job client.Job, opts client.Options) (client.Result, []byte, error) {
	var out lockedbuf.Buffer
	opts.Output, opts.Logger = &out, h.logger()
	res, err := kube.Run(ctx, t, job, opts)
	return res, out.Bytes(), err
}
