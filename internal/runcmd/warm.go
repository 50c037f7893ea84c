package runcmd

import (
	"context"
	"errors"
	"io"

	"k8s.io/client-go/rest"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi"
	"github.com/tether-ci/tether/internal/cmdutil"
)

// runWarm runs the job on a warm pod of --pool (kube.Claim): no pod to
// create, none to wait for; the scripts, variables and masked values go
// over the attach stream. ok is false when no pod was claimed (the reason
// is logged at debug level) or when the claimed pod was gone before the
// job reached it (the claimed pod is deleted first): the caller then
// starts a cold pod at once. Otherwise the output, exit code, cancel,
// timeouts and cleanup are those of a cold pod.
func runWarm(ctx context.Context, f *Flags, cfg *rest.Config, cs kubeapi.Interface, spec kube.Spec, job client.Job, stdout io.Writer) (code int, ok bool) {
	log := f.Logger
	// The claim attaches and protects the pod while it claims it; the
	// claim saw the build container running, so the pod is read only if
	// that attach fails (a pod gone meanwhile).
	topts := kube.TransportOptions{Logger: log, AttachFirst: true}
	pod, err := kube.Claim(ctx, cs, kube.ClaimRequest{Pool: f.Pool, Spec: spec, Logger: log,
		Connect: &kube.ClaimConnect{Config: cfg, Options: topts}})
	if errors.Is(err, kube.ErrNoWarmPod) {
		return 0, false // Claim logged why, at debug level
	}
	if err != nil {
		log.Error("cannot build the pod", "err", err)
		return cmdutil.ExitUsage, true
	}
	log.Info("claimed a warm pod", "pool", f.Pool, "pod", pod.Namespace+"/"+pod.Name)
	pod.DeleteGrace = spec.TerminationGracePeriod
	if f.Keep {
		defer log.Info("keeping the pod (--keep)", "pod", pod.Namespace+"/"+pod.Name)
		defer func() { _ = pod.Protected(ctx) }() // its warning is logged
	} else {
		defer cmdutil.DeletePod(ctx, log, pod)
		remove := cmdutil.OnForce(ctx, func() { cmdutil.DeletePod(ctx, log, pod) })
		defer remove()
	}
	wj := pod.Job
	wj.Mask = append(wj.Mask, job.Mask...) // masked values travel in the job command only
	wj.Shell = job.Shell
	// A pod gone before the job reached it ends the session at once (no
	// log to read, no disruption to wait for): the job starts elsewhere.
	fctx, gone := context.WithCancelCause(ctx)
	defer gone(nil)
	t := &cmdutil.FirstConnect{Transport: pod.Transport(cfg, topts), Gone: gone}
	var begun scriptsBegun
	res, err := follow(fctx, f, t, pod, wj, stdout, &begun)
	if !t.Reached() && ctx.Err() == nil {
		log.Info("the warm pod was gone before the job reached it; starting a pod for the job", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		return 0, false
	}
	return report(f, wj, res, err, &begun), true
}
