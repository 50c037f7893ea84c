package actions

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/actions/hookapi"
	"github.com/tether-ci/tether/internal/cmdutil"
)

// MissOptions is why prepare_job did not ask the pool for a warm pod: the
// workflow's container options or the hook template change the job's pod
// beyond what a pool declares (actionspod.Shape), so no warm pod has it.
// It is recorded as the other misses are (kube.RecordMiss).
const MissOptions kube.MissReason = "options"

// prepareWarm is prepare_job on a warm pod of the pool setting
// (kube.Claim): spec is the job's pod as jobSpec, addExternals and
// shape.shapeSpec made it. claimed is false when no pod was claimed (why
// is logged at debug level and recorded as a miss Event: kube.Claim's
// reasons, or MissOptions): the caller creates the job's pod at once. A claimed pod gets what
// belongs to the job after the claim: its owner (the runner's pod) and
// labels at the claim, its pull Secret, the job's deadline and TTL with
// the first job over the stream, the runner's disk copied over the
// stream, and the job container's variables in the state, from which
// every script step gets them over the stream (its spec holds none).
// A claimed pod lost before the probe reached its shim (dropClaimed
// deletes it and its Secret) is no pod: claimed is false, the caller
// creates the job's pod at once. The response, state, steps and cleanup
// are a created pod's.
func prepareWarm(ctx context.Context, h *Hook, c *cluster, shape *podShape, spec kube.Spec, args *PrepareJobArgs, runner *corev1.Pod, disk *runnerDisk, pullConfig []byte, responseFile string, after *afterExit) (claimed bool, err error) {
	log, pool := h.logger(), h.Settings.Pool
	if why := shapedBeyondSpec(shape, spec, args.Services); why != "" {
		log.Debug("no warm pod for the job: starting a pod of its own", "pool", pool, "reason", string(MissOptions), "why", why)
		kube.RecordMiss(ctx, c.cs, c.namespace, &kube.MissError{Pool: pool, Reason: MissOptions, Err: errors.New(why)}, log)
		return false, nil
	}
	req := kube.ClaimRequest{Pool: pool, Spec: spec, Logger: log}
	if runner != nil {
		ref := kube.PodOwner(runner.Name, runner.UID)
		req.Owner = &ref
	}
	pod, err := kube.Claim(ctx, c.cs, req)
	if err != nil {
		var miss *kube.MissError
		if errors.As(err, &miss) {
			log.Debug("no warm pod for the job: starting a pod of its own", "pool", pool, "reason", string(miss.Reason), "err", miss.Err)
		} else { // a spec Build refuses: the created pod's error says why
			log.Debug("no warm pod for the job: starting a pod of its own", "pool", pool, "err", err)
		}
		return false, nil
	}
	fmt.Fprintf(h.Stdout, "tether: claimed warm pod %s/%s of pool %s (image %s)\n", pod.Namespace, pod.Name, pool, args.Container.Image)
	st := &hookapi.State{Pod: pod.Name, Namespace: pod.Namespace, Env: spec.Env}
	if err := createPullSecret(ctx, c, pod, pod.Job.ID, pullConfig); err != nil {
		rollBackOnFailure(ctx, h, pod, st, after)
		return true, err
	}
	// The probe is the first connection to the claimed pod's shim: a pod
	// lost before it reached the shim (deleted, evicted, its shim ended)
	// never saw the job, which then starts on a pod of its own at once.
	t := &cmdutil.FirstConnect{Transport: pod.Transport(c.cfg, kube.TransportOptions{Logger: log})}
	pctx, gone := context.WithCancelCause(ctx)
	defer gone(nil)
	t.Gone = gone
	alpine, err := startPod(pctx, h, c, pod, t, args)
	if err != nil && !t.Reached() && ctx.Err() == nil {
		fmt.Fprintf(h.Stdout, "tether: the warm pod %s/%s was gone before the job reached it (%v); starting a pod for the job\n", pod.Namespace, pod.Name, err)
		dropClaimed(ctx, h, c, pod)
		return false, nil
	}
	rollBackOnFailure(ctx, h, pod, st, after)
	if err != nil {
		return true, err
	}
	return true, finishPrepare(ctx, h, c, pod, st, args, alpine, disk, responseFile)
}

// dropClaimed deletes a claimed pod the job never reached, and its pull
// Secret (which its ownerReference would remove later), before the job
// starts on a pod of its own; what cannot be deleted is a warning (the
// pod's deadline and TTL end it, cleanup_job tries again).
func dropClaimed(ctx context.Context, h *Hook, c *cluster, pod *kube.Pod) {
	dctx, cancel := context.WithTimeout(ctx, deleteTimeout)
	defer cancel()
	if err := pod.Delete(dctx); err != nil {
		h.warn("cannot delete the claimed warm pod %s/%s the job never reached: %v", pod.Namespace, pod.Name, err)
	}
	name := pod.Name + pullSecretSuffix
	if err := c.cs.CoreV1().Secrets(pod.Namespace).Delete(dctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		h.warn("cannot delete the pull Secret %s/%s of the claimed warm pod the job never reached: %v", pod.Namespace, name, err)
	}
}

// shapedBeyondSpec says what of the job's pod shape.shapePod would change
// beyond spec (the workflow's container options a kube.Spec does not
// carry, the hook template), "" when nothing: only then can a warm pod,
// built from a spec alone, be the job's pod.
func shapedBeyondSpec(shape *podShape, spec kube.Spec, services []Container) string {
	s := spec
	s.Name = "tether-pool-check"
	objs, err := kube.Build(s)
	if err != nil {
		return err.Error()
	}
	before := objs.Pod.DeepCopy()
	if err := shapeObjects(shape, objs, services, func(string, ...any) {}); err != nil {
		return err.Error()
	}
	if !apiequality.Semantic.DeepEqual(before, objs.Pod) {
		return "the workflow's container options or the hook template (" + EnvHookTemplate + ") change the job's pod"
	}
	return ""
}

// addContainerEnv gives the step's job the job container's variables as
// an env file over the stream (a claimed warm pod's; State.Env): the
// shim puts them under the step's own, as a created pod's container
// environment is. Nothing without variables.
func addContainerEnv(job *client.Job, env map[string]string) error {
	if err := job.AddEnvFile(kube.FilesDir+"/.env-"+job.ID, env); err != nil {
		return fmt.Errorf("the job container's variables: %w", err)
	}
	return nil
}
