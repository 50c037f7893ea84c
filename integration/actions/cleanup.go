package actions

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/actions/hookapi"
)

// deleteTimeout bounds a cleanup's API calls (they run even after the
// runner cancelled the job).
const deleteTimeout = 60 * time.Second

// CleanupJob is cleanup_job: it deletes the job's pod (its Secret goes
// with it, through its ownerReference) and any other job pod of this
// runner pod that a failed prepare_job left. A pod already gone is fine:
// running it twice, or after a failed prepare_job, succeeds.
func CleanupJob(ctx context.Context, h *Hook, in *hookapi.Input) int {
	return h.run(ctx, cleanupJob, in)
}

func cleanupJob(ctx context.Context, h *Hook, in *hookapi.Input, _ *afterExit) error {
	c, err := h.connect()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
	defer cancel()
	var errs []error
	if st, err := hookapi.JobPod(in.State); err == nil {
		errs = append(errs, deletePod(ctx, c, h, st))
	}
	if runner := h.Getenv(EnvRunnerPodName); runner != "" {
		sel := labels.SelectorFromSet(labels.Set{LabelRunnerPod: runner, kube.LabelManagedBy: kube.ManagedByValue})
		list, err := c.cs.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			errs = append(errs, fmt.Errorf("list the job pods of runner pod %s/%s: %w", c.namespace, runner, err))
		} else {
			for _, p := range list.Items {
				errs = append(errs, deletePod(ctx, c, h, &hookapi.State{Pod: p.Name, Namespace: p.Namespace}))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cleanup: %w", err)
	}
	return nil
}

// deletePod deletes the pod st names; a pod that is gone is no error.
func deletePod(ctx context.Context, c *cluster, h *Hook, st *hookapi.State) error {
	_, err := c.pod(h, st).DeleteByName(ctx)
	return err
}
