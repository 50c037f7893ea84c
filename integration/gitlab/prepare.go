package gitlab

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/tether-ci/tether/client/kube"
	gitlab "github.com/tether-ci/tether/integration/gitlab/internal/runnerapi"
)

// gitlabLabels map pod labels to the job variables that fill them.
var gitlabLabels = map[string]string{
	"tether.dev/gitlab-project":  "CI_PROJECT_ID",
	"tether.dev/gitlab-pipeline": "CI_PIPELINE_ID",
	"tether.dev/gitlab-job":      "CI_JOB_ID",
}

// Prepare is prepare_exec: it creates the job's pod and waits until it
// runs. Its output (the pod's events included) goes to stdout, the job
// log. It returns 0, or SYSTEM_FAILURE_EXIT_CODE with an "ERROR: tether:"
// line saying what failed; bad settings and a bad job fail before
// anything touches the cluster.
func Prepare(ctx context.Context, cfg *Settings, env Env, stdout io.Writer) int {
	codes := gitlab.ReadExitCodes(env)
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stdout, "ERROR: tether: "+format+"\n", args...)
		return codes.SystemFailure
	}
	job, err := gitlab.ReadJob(env)
	if err != nil {
		return fail("%v", err)
	}
	name, err := gitlab.PodName(env)
	if err != nil {
		return fail("%v", err)
	}
	// Settings first: bad ones fail before anything touches the cluster.
	spec, err := gitlabSpec(cfg, job, name, env)
	if err != nil {
		return fail("%v", err)
	}
	jobLog := cfg.jobLog(stdout)
	pod, _, server, err := gitlabPod(cfg, env, jobLog)
	if err != nil {
		return fail("%v", err)
	}
	spec.Namespace = pod.Namespace
	// What the runner's identity may not do fails here, before a pod
	// exists, with one message, not later in a stage or in cleanup.
	access, err := checkGitlabAccess(ctx, pod.Client, pod.Namespace)
	switch {
	case apierrors.IsUnauthorized(err):
		return fail("%v%s", err, apiAdvice(err))
	case unreachable(err) && ctx.Err() == nil:
		return fail("cannot reach the Kubernetes API server at %s (the server of the driver's kubeconfig): %v", server, err)
	case err != nil:
		jobLog.Debug("cannot check the runner's permissions; going on", "err", err)
	case access.Err() != nil:
		return fail("%v", access.Err())
	case access.Warning() != "":
		fmt.Fprintf(stdout, "WARNING: tether: %s\n", access.Warning())
	}
	if cfg.Pool != "" {
		claimed, ok, err := claimWarm(ctx, cfg, pod, spec, stdout, jobLog)
		if err != nil {
			return fail("cannot build the job's pod: %v", err)
		}
		if ok {
			checkRunnerCommand(ctx, claimed, job, helperImageOf(spec), spec.Image, stdout, jobLog)
			return 0
		}
	}
	objs, err := kube.Build(spec)
	if err != nil {
		return fail("cannot build the job's pod: %v", err)
	}
	created, err := kube.Create(ctx, pod.Client, objs, jobLog)
	if apierrors.IsAlreadyExists(err) {
		fmt.Fprintf(stdout, "tether: pod %s/%s is left from an earlier prepare of this job; replacing it\n", pod.Namespace, pod.Name)
		if err := removeLeftover(ctx, pod); err != nil {
			return fail("%v", err)
		}
		created, err = kube.Create(ctx, pod.Client, objs, jobLog)
	}
	if err != nil {
		return fail("cannot create the job's pod: %v%s", err, quotaAdvice(err))
	}
	fmt.Fprintf(stdout, "tether: pod %s/%s created (image %s)\n", created.Namespace, created.Name, spec.Image)
	if err := created.WaitRunning(ctx, kube.WaitOptions{ScheduleTimeout: cfg.ScheduleTimeout}); err != nil {
		if ctx.Err() != nil {
			return fail("stopped while the job's pod was starting (%v: the job was cancelled, or prepare_exec_timeout passed); cleanup deletes the pod", context.Cause(ctx))
		}
		return fail("the job's pod did not start: %v%s", err, pullAdvice(err, spec))
	}
	fmt.Fprintf(stdout, "tether: pod %s/%s is running\n", created.Namespace, created.Name)
	checkRunnerCommand(ctx, created, job, helperImageOf(spec), spec.Image, stdout, jobLog)
	return 0
}

// gitlabSpec is the job's pod: the job's image (or the configured one) and
// services, the driver's pod shaping, the builds and cache volumes shared
// with the helper container, and the job's timeout. The caller fills in
// the namespace.
func gitlabSpec(cfg *Settings, job *gitlab.Job, name string, getenv func(string) string) (kube.Spec, error) {
	spec := kube.Spec{
		Name: name, JobID: name,
		Image: gitlab.Expand(getenv, job.Image.Name), HelperImage: cfg.HelperImage,
		Timeout: job.Timeout(), IdleTimeout: cfg.IdleTimeout,
	}
	if spec.Timeout > 0 {
		spec.TTL = spec.Timeout + cfg.TTLMargin
	}
	if spec.Image == "" {
		spec.Image = cfg.Image
	}
	allowed := cfg.allowedPullPolicies()
	var err error
	if spec.ImagePullPolicy, err = jobPullPolicy(job.Image.PullPolicies, allowed, "the job's image"); err != nil {
		return spec, err
	}
	if spec.Image == "" {
		return spec, fmt.Errorf("the job names no image (image: in its .gitlab-ci.yml) and the driver config sets no default: set image: in %s, or pass --image", cfg.where())
	}
	if err := cfg.Pod.ApplyTo(&spec); err != nil {
		return spec, fmt.Errorf("the driver config: %w", err)
	}
	if spec.Labels == nil {
		spec.Labels = map[string]string{}
	}
	for label, v := range gitlabLabels {
		if val := gitlab.Env(getenv, v); val != "" {
			spec.Labels[label] = val
		}
	}
	svcResources, err := cfg.Pod.ServiceRequirements()
	if err != nil {
		return spec, fmt.Errorf("the driver config: %w", err)
	}
	for i, s := range job.Services {
		if s.Name == "" {
			return spec, fmt.Errorf("service %d of the job has no name (image)", i)
		}
		svc := kube.Service{Image: gitlab.Expand(getenv, s.Name), Command: s.Entrypoint, Args: s.Command, Env: map[string]string{}, Resources: svcResources}
		if svc.PullPolicy, err = jobPullPolicy(s.PullPolicies, allowed, "service "+svc.Image); err != nil {
			return spec, err
		}
		if alias := gitlab.Expand(getenv, s.Alias); alias != "" {
			svc.Aliases = []string{alias}
		}
		for _, v := range s.Variables {
			svc.Env[v.Key] = v.Value
		}
		spec.Services = append(spec.Services, svc)
	}
	shape, err := cfg.podShape(getenv)
	if err != nil {
		return spec, err
	}
	shape.Apply(&spec)
	return spec, nil
}

// allowedPullPolicies are the pull policies a job may choose: the driver
// config's allowed-pull-policies, else its pull-policy alone, as GitLab
// Runner's Kubernetes executor defaults them.
func (f *Settings) allowedPullPolicies() []string {
	if len(f.AllowedPullPolicies) > 0 {
		return f.AllowedPullPolicies
	}
	if f.PullPolicy != "" {
		return []string{f.PullPolicy}
	}
	return nil
}

// jobPullPolicy is gitlab.JobPullPolicy as a Kubernetes policy.
func jobPullPolicy(asked, allowed []string, what string) (corev1.PullPolicy, error) {
	p, err := gitlab.JobPullPolicy(asked, allowed, what)
	return corev1.PullPolicy(p), err
}
