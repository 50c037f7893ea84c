package gitlab

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tether-ci/tether/client/kube"
)

// leftoverTimeout bounds the wait for an earlier prepare's pod to go.
const leftoverTimeout = 2 * time.Minute

// removeLeftover deletes the job's pod that an earlier prepare of the
// same job left (the runner tries prepare up to three times and runs
// cleanup in between, whose delete may still be under way: a pod keeps
// its name while it terminates) and waits until it is gone. The pod's
// name is the runner's and the job's IDs, so it can be no other job's.
func removeLeftover(ctx context.Context, pod *kube.Pod) error {
	ctx, cancel := context.WithTimeout(ctx, leftoverTimeout)
	defer cancel()
	old := &kube.Pod{Client: pod.Client, Namespace: pod.Namespace, Name: pod.Name,
		DeleteGrace: time.Second, Logger: pod.Logger}
	uid, err := old.DeleteByName(ctx)
	if uid == "" || err != nil {
		return err
	}
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p, err := pod.Get(ctx)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err == nil && p.UID != uid {
			return false, fmt.Errorf("pod %s/%s was created again by another process while it was being replaced", pod.Namespace, pod.Name)
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("replace the pod %s/%s an earlier prepare of this job left: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
