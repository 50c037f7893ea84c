package cmdutil

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi"
)

// DeleteTimeout bounds deleting the pod at the end of a job.
const DeleteTimeout = 30 * time.Second

// RouteKlog sends client-go's klog output (connection noise such as
// "Websocket Ping failed" while a dropped attach is being replaced) to log
// at debug level instead of raw lines on stderr; the session reports the
// drops itself.
func RouteKlog(log *slog.Logger) {
	klog.SetSlogLogger(slog.New(debugHandler{log.Handler()}))
}

// debugHandler logs every record at debug level.
type debugHandler struct{ slog.Handler }

func (h debugHandler) Enabled(ctx context.Context, _ slog.Level) bool {
	return h.Handler.Enabled(ctx, slog.LevelDebug)
}

func (h debugHandler) Handle(ctx context.Context, r slog.Record) error {
	// logr hands errors over without asking Enabled first.
	if !h.Handler.Enabled(ctx, slog.LevelDebug) {
		return nil
	}
	r.Level = slog.LevelDebug
	return h.Handler.Handle(ctx, r)
}

func (h debugHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return debugHandler{h.Handler.WithAttrs(attrs)}
}

func (h debugHandler) WithGroup(name string) slog.Handler {
	return debugHandler{h.Handler.WithGroup(name)}
}

// KubeClients loads the client configuration the kubectl way (KUBECONFIG,
// --kubeconfig, --context, -n, in-cluster) and builds a clientset for it.
func KubeClients(opts kube.ConfigOptions) (*rest.Config, string, *kubeapi.Clientset, error) {
	cfg, ns, err := kube.LoadConfig(opts)
	if err != nil {
		return nil, "", nil, err
	}
	cs, err := kubeapi.New(cfg)
	if err != nil {
		return nil, "", nil, fmt.Errorf("build a Kubernetes client: %w", err)
	}
	return cfg, ns, cs, nil
}

// DeletePod deletes the job's pod, whatever happened to ctx.
func DeletePod(ctx context.Context, log *slog.Logger, pod *kube.Pod) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DeleteTimeout)
	defer cancel()
	if err := pod.Delete(dctx); err != nil {
		log.Error("cannot delete the job's pod; `tether gc` removes it after its TTL", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
}
