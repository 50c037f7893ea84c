package actions

import (
	"context"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
)

// keepShimAwake reaches the job container's shim every quarter of the
// idle timeout until ctx ends: a container step runs beside the shim, not
// through it, and the shim would otherwise count the step's time as idle
// and end the pod under it. from is where the shim's record stream ended
// (nothing runs on it during the step). A missed reach is only logged:
// the next one comes well before the timeout.
func keepShimAwake(ctx context.Context, h *Hook, c *cluster, pod *kube.Pod, from int64) {
	idle := h.Settings.IdleTimeout
	if idle <= 0 {
		return
	}
	// The condition never ends the poll: only ctx does.
	_ = wait.PollUntilContextCancel(ctx, idle/4, false, func(ctx context.Context) (bool, error) {
		if _, err := client.StreamEnd(ctx, c.transport(h, pod), from, client.Options{Logger: h.logger()}); err != nil && ctx.Err() == nil {
			h.logger().Debug("cannot reach the job container's shim to keep it from its idle timeout", "err", err)
		}
		return false, nil
	})
}
