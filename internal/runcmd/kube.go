package runcmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/cmdutil"
	"github.com/tether-ci/tether/internal/version"
)

// runKube runs job in a Kubernetes pod: build the pod and its ConfigMap and
// Secret, wait for it to run (printing its events), attach, follow the job,
// delete the pod (unless --keep).
func runKube(ctx context.Context, f *Flags, job client.Job, stdout, stderr io.Writer) int {
	log := f.Logger
	cmdutil.RouteKlog(log)
	cfg, ns, cs, err := cmdutil.KubeClients(kube.ConfigOptions{Kubeconfig: f.Kubeconfig, Context: f.Context, Namespace: f.Namespace, UserAgent: version.UserAgent("run")})
	if err != nil {
		log.Error("cannot reach Kubernetes", "err", err)
		return cmdutil.ExitTether
	}
	spec, code := jobSpec(f, job, ns)
	if code != 0 {
		return code
	}
	if f.Pool != "" {
		if code, ok := runWarm(ctx, f, cfg, cs, spec, job, stdout); ok {
			return code
		}
	}
	objs, err := kube.Build(spec)
	if err != nil {
		log.Error("cannot build the pod", "err", err)
		return cmdutil.ExitUsage
	}
	pod, err := kube.Create(ctx, cs, objs, log)
	if err != nil {
		log.Error("cannot create the job's pod", "err", err)
		return cmdutil.ExitTether
	}
	pod.DeleteGrace = spec.TerminationGracePeriod
	if f.Keep {
		defer log.Info("keeping the pod (--keep)", "pod", pod.Namespace+"/"+pod.Name)
	} else {
		defer cmdutil.DeletePod(ctx, log, pod)
		remove := cmdutil.OnForce(ctx, func() { cmdutil.DeletePod(ctx, log, pod) })
		defer remove()
	}
	if err := pod.WaitRunning(ctx, kube.WaitOptions{ScheduleTimeout: f.ScheduleTimeout}); err != nil {
		if ctx.Err() != nil {
			log.Error("cancelled while the pod was starting", "pod", pod.Namespace+"/"+pod.Name, "cause", context.Cause(ctx))
			return cmdutil.ExitCancelled
		}
		log.Error("the job's pod did not start", "err", err)
		return cmdutil.ExitTether
	}
	objs.Job.Mask = job.Mask   // masked values travel in the job command only
	objs.Job.Shell = job.Shell // --shell: the job command chooses the shell
	var begun scriptsBegun
	res, err := follow(ctx, f, pod.Transport(cfg, kube.TransportOptions{Logger: log}), pod, objs.Job, stdout, &begun)
	// objs.Job names the scripts by their paths in the pod, as the statuses do.
	return report(f, objs.Job, res, err, &begun)
}

// jobSpec returns the job's pod spec in namespace ns from the flags, or
// the exit code of a usage error (logged).
func jobSpec(f *Flags, job client.Job, ns string) (kube.Spec, int) {
	log := f.Logger
	scripts, err := readScripts(job.Scripts)
	if err != nil {
		log.Error("cannot read the scripts", "err", err)
		return kube.Spec{}, cmdutil.ExitUsage
	}
	after, err := readScripts(job.After)
	if err != nil {
		log.Error("cannot read the scripts", "err", err)
		return kube.Spec{}, cmdutil.ExitUsage
	}
	env := map[string]string{}
	for _, kv := range f.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	spec := kube.Spec{
		Namespace:   ns,
		JobID:       job.ID,
		Image:       f.Image,
		HelperImage: f.HelperImage,
		Scripts:     scripts,
		After:       after,
		Env:         env,
		Timeout:     f.Timeout,
		TTL:         f.TTL,
		IdleTimeout: f.IdleTimeout,
		TTY:         f.TTY,
	}
	spec.AfterTimeout = f.AfterTimeout
	if f.AfterTimeout == 0 {
		spec.AfterTimeout = -1 // none: the flag's 0 means the after-scripts do not run after the timeout
	}
	f.Security.ApplyTo(&spec)
	if err := f.Pod.ApplyTo(&spec); err != nil {
		log.Error("invalid pod-shaping flag", "err", err)
		return kube.Spec{}, cmdutil.ExitUsage
	}
	return spec, 0
}

// follow attaches to the job's pod and follows the job to its result.
func follow(ctx context.Context, f *Flags, t client.Transport, pod *kube.Pod, job client.Job, stdout io.Writer, begun *scriptsBegun) (client.Result, error) {
	f.Logger.Info("attaching", "pod", pod.Namespace+"/"+pod.Name, "container", pod.Container)
	opts := client.Options{
		Output:   stdout,
		Events:   begun.events(cmdutil.Progress(f.Logger)),
		Logger:   f.Logger,
		ExitShim: true,
	}
	f.OutputLimit.Apply(&opts)
	f.applyStderr(&opts)
	return kube.Run(ctx, t, job, opts)
}

// report logs the job's summary and returns tether's exit code for it.
func report(f *Flags, job client.Job, res client.Result, err error, begun *scriptsBegun) int {
	cmdutil.Report(f.Logger, res, err, jobAttrs(job, f.Start, res, begun.list())...)
	return cmdutil.ExitCode(res, err)
}

// readScripts reads the scripts at paths.
func readScripts(paths []string) ([]kube.Script, error) {
	out := make([]kube.Script, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read script: %w", err)
		}
		out = append(out, kube.Script{Name: filepath.Base(p), Content: b})
	}
	return out, nil
}
