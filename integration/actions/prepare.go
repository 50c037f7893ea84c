package actions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/actions/hookapi"
	"github.com/tether-ci/tether/integration/actions/internal/shell"
	"github.com/tether-ci/tether/integration/actions/internal/transfer"
	"github.com/tether-ci/tether/internal/actionspod"
)

// PrepareJob is prepare_job: it creates the job's pod (the job container
// running tether-shim, the services as native sidecars), waits until it
// runs, makes the runner's directories in it, and writes the response.
// A pod it created is deleted again when anything after the create fails.
func PrepareJob(ctx context.Context, h *Hook, in *hookapi.Input) int {
	return h.run(ctx, prepareJob, in)
}

func prepareJob(ctx context.Context, h *Hook, in *hookapi.Input, after *afterExit) error {
	var args PrepareJobArgs
	if err := in.DecodeArgs(&args); err != nil {
		return err
	}
	if args.Container == nil {
		return errors.New("the job has no container: tether actions runs every job in a pod, so set container: in the workflow's job")
	}
	if args.Container.Image == "" {
		return errors.New("the job container has no image (a Dockerfile is not supported): set container.image in the workflow")
	}
	if err := checkWorkingDirectory(args.Container.WorkingDirectory); err != nil {
		return fmt.Errorf("the job container: %w", err)
	}
	disk, err := planRunnerDisk(args.Container, h.Settings.CopyLimit)
	if err != nil {
		return err
	}
	shape, err := planShape(&args, h.Getenv(EnvHookTemplate), h.warn)
	if err != nil {
		return err
	}
	c, err := h.connect()
	if err != nil {
		return err
	}
	spec, err := jobSpec(h.Settings, &args, c.namespace, h.Getenv(EnvRunnerPodName))
	if err != nil {
		return err
	}
	var runner *corev1.Pod
	if name := h.Getenv(EnvRunnerPodName); name != "" {
		if runner, err = runnerPod(ctx, c, name); err != nil {
			return err
		}
	}
	if err := addExternals(&spec, h.Getenv, runner); err != nil {
		return err
	}
	if err := shape.shapeSpec(&spec); err != nil {
		return err
	}
	pullConfig, err := dockerConfig(&args)
	if err != nil {
		return err
	}
	if pullConfig == nil {
		// Every pod names a pull Secret, empty without credentials: a
		// pod's imagePullSecrets are fixed at its creation, and a
		// container step's image may need credentials later
		// (addStepCredentials).
		pullConfig = []byte(emptyDockerConfig)
	}
	if h.Settings.Pool != "" {
		if claimed, err := prepareWarm(ctx, h, c, shape, spec, &args, runner, disk, pullConfig, in.ResponseFile, after); claimed {
			return err
		}
	}
	// The pod's imagePullSecrets name its own pull Secret (created, owned
	// by the pod, right after it): spec.OwnPullSecret.
	spec.Name = kube.NewPodName()
	objs, err := kube.Build(spec)
	if err != nil {
		return fmt.Errorf("cannot build the job's pod: %w", err)
	}
	if err := shapeObjects(shape, objs, args.Services, h.warn); err != nil {
		return err
	}
	if runner != nil {
		ref := kube.PodOwner(runner.Name, runner.UID)
		for _, p := range []*corev1.Pod{objs.Pod, objs.Fallback} {
			if p != nil {
				p.OwnerReferences = append(p.OwnerReferences, ref)
			}
		}
	}
	pod, err := kube.Create(ctx, c.cs, objs, h.logger())
	if err != nil {
		return fmt.Errorf("cannot create the job's pod: %w", err)
	}
	st := &hookapi.State{Pod: pod.Name, Namespace: pod.Namespace}
	rollBackOnFailure(ctx, h, pod, st, after)
	if err := createPullSecret(ctx, c, pod, objs.Job.ID, pullConfig); err != nil {
		return err
	}
	fmt.Fprintf(h.Stdout, "tether: pod %s/%s created (image %s)\n", pod.Namespace, pod.Name, args.Container.Image)
	return prepareCreated(ctx, h, c, pod, st, &args, disk, in.ResponseFile)
}

// rollBackOnFailure deletes the job's pod when the prepare fails (after
// runs it once the command's outcome is known).
func rollBackOnFailure(ctx context.Context, h *Hook, pod *kube.Pod, st *hookapi.State, after *afterExit) {
	after.add(func(failed bool) {
		if !failed {
			return
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
		defer cancel()
		if err := pod.Delete(dctx); err != nil {
			h.warn("cannot delete the job's pod %s/%s after the failed prepare (cleanup_job tries again): %v", st.Namespace, st.Pod, err)
		}
	})
}

// prepareCreated waits for the job's pod (created or claimed), probes it,
// copies the runner's disk into it and writes the response; an error
// means the pod must go.
func prepareCreated(ctx context.Context, h *Hook, c *cluster, pod *kube.Pod, st *hookapi.State, args *PrepareJobArgs, disk *runnerDisk, responseFile string) error {
	alpine, err := startPod(ctx, h, c, pod, c.transport(h, pod), args)
	if err != nil {
		return err
	}
	return finishPrepare(ctx, h, c, pod, st, args, alpine, disk, responseFile)
}

// startPod waits for the job's pod to run and probes it through t (its
// job container's transport): it returns isAlpine.
func startPod(ctx context.Context, h *Hook, c *cluster, pod *kube.Pod, t client.Transport, args *PrepareJobArgs) (bool, error) {
	if err := pod.WaitRunning(ctx, kube.WaitOptions{Timeout: h.Settings.PrepareTimeout, ScheduleTimeout: h.Settings.Pod.ScheduleTimeout}); err != nil {
		if ctx.Err() != nil {
			return false, fmt.Errorf("stopped while the job's pod was starting: %w", context.Cause(ctx))
		}
		return false, fmt.Errorf("the job's pod did not start: %w%s", err, externalsHint(err))
	}
	alpine, err := probePod(ctx, h, c, pod, t, args.Container.WorkingDirectory)
	if err != nil {
		return false, fmt.Errorf("the job's pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return alpine, nil
}

// finishPrepare copies the runner's disk into the job's pod, which runs
// and answered the probe, and writes the response.
func finishPrepare(ctx context.Context, h *Hook, c *cluster, pod *kube.Pod, st *hookapi.State, args *PrepareJobArgs, alpine bool, disk *runnerDisk, responseFile string) error {
	if err := copyRunnerDisk(ctx, h, c, pod, disk); err != nil {
		return fmt.Errorf("the job's pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	resp := prepareResponse(st, args, alpine)
	return hookapi.WriteResponse(responseFile, resp)
}

// jobSpec is the job's pod: actionspod's shape of the job container's
// image, the services and the settings' pod shaping, plus the job's own:
// its variables (GITHUB_ACTIONS and CI, as the runner's docker containers
// get them, and the workflow's), its timeouts and the runner pod's label.
func jobSpec(s Settings, args *PrepareJobArgs, namespace, runnerPod string) (kube.Spec, error) {
	ctr := args.Container
	shape := actionspod.Shape{Namespace: namespace, Image: ctr.Image, HelperImage: s.HelperImage, PullPolicy: s.PullPolicy,
		Pod: s.Pod, ServiceAccount: s.ServiceAccount, NodeSelector: s.NodeSelector}
	for i, svc := range args.Services {
		if svc.Image == "" {
			return kube.Spec{}, fmt.Errorf("service %d has no image", i)
		}
		a, err := shell.SplitArgs(svc.EntryPointArgs)
		if err != nil {
			return kube.Spec{}, fmt.Errorf("service %d (%s): %w", i, svc.Image, err)
		}
		shape.Services = append(shape.Services, actionspod.Service{Image: svc.Image, EntryPoint: svc.EntryPoint, Args: a, Env: svc.EnvironmentVariables})
	}
	spec, err := shape.Spec()
	if err != nil { // the services are checked above: the settings are wrong
		return spec, fmt.Errorf("%s: %w", EnvConfig, err)
	}
	spec.Timeout, spec.IdleTimeout, spec.Env = s.JobTimeout, s.IdleTimeout, runnerContainerEnv()
	for k, v := range ctr.EnvironmentVariables {
		if strings.HasPrefix(k, kube.ShimEnvPrefix) {
			return spec, fmt.Errorf("the job container's variable %s: names starting with %s are reserved for tether-shim's settings: rename it", k, kube.ShimEnvPrefix)
		}
		spec.Env[k] = v
	}
	if runnerPod != "" && len(validation.IsValidLabelValue(runnerPod)) == 0 {
		if spec.Labels == nil {
			spec.Labels = map[string]string{}
		}
		spec.Labels[LabelRunnerPod] = runnerPod
	}
	return spec, nil
}

// imageAlias is the host name a service is reached under besides
// localhost (actionspod.ServiceAlias).
func imageAlias(image string) string { return actionspod.ServiceAlias(image) }

// runnerPod reads the runner's pod: it becomes the job pod's owner, so the
// job pod goes with it, and its image is the externals' default.
func runnerPod(ctx context.Context, c *cluster, name string) (*corev1.Pod, error) {
	p, err := c.cs.CoreV1().Pods(c.namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		advice := ""
		if apierrors.IsNotFound(err) {
			advice = fmt.Sprintf(" (%s names the runner's pod; the job pods are made in namespace %s, which must be the runner's)", EnvRunnerPodName, c.namespace)
		}
		return nil, fmt.Errorf("cannot read the runner's pod %s/%s to make it the job pod's owner: %w%s", c.namespace, name, err, advice)
	}
	return p, nil
}

// probeScript makes the runner's directories in the job container and
// says whether its image is Alpine Linux.
const probeScript = `#!/bin/sh
mkdir -p ` + FileCommandsDir + ` ` + HomeDir + ` ` + WorkflowDir + ` %s || exit 1
if [ -f /etc/alpine-release ]; then echo isAlpine=true; else echo isAlpine=false; fi
`

// probePod runs probeScript through the shim (over t) and returns
// isAlpine.
func probePod(ctx context.Context, h *Hook, c *cluster, pod *kube.Pod, t client.Transport, workdir string) (bool, error) {
	dirs := ""
	if workdir != "" {
		dirs = shell.Quote(workdir)
	}
	job := transfer.ScriptJob(client.NewJobID("prepare"), "prepare.sh", fmt.Appendf(nil, probeScript, dirs))
	// A claimed warm pod's shim learns the job's deadline and TTL here
	// (kube.Claim); a created pod's has them from its start.
	job.Deadline, job.TTL = pod.Job.Deadline, pod.Job.TTL
	res, out, err := c.runHelperOn(ctx, h, t, job, client.Options{})
	if err != nil {
		return false, fmt.Errorf("cannot run the preparing script in the job container: %w", err)
	}
	if res.ExitCode != 0 {
		return false, fmt.Errorf("the preparing script failed in the job container (exit code %d): %s", res.ExitCode, bytes.TrimSpace(out))
	}
	return bytes.Contains(out, []byte("isAlpine=true\n")), nil
}

// prepareResponse is prepare_job's response: the state, the containers'
// ports (reachable on localhost, so each container port maps to itself),
// services in args' order.
func prepareResponse(st *hookapi.State, args *PrepareJobArgs, alpine bool) *hookapi.PrepareResponse {
	resp := &hookapi.PrepareResponse{State: st, IsAlpine: alpine, Context: hookapi.ResponseContext{
		Container: &hookapi.ResponseContainer{Image: args.Container.Image, Ports: ports(args.Container.PortMappings)},
		Services:  []hookapi.ResponseContainer{},
	}}
	for _, s := range args.Services {
		resp.Context.Services = append(resp.Context.Services, hookapi.ResponseContainer{Image: s.Image, Ports: ports(s.PortMappings)})
	}
	return resp
}

// portMapping is a docker port mapping: [[ip:]hostPort:]containerPort[/proto].
var portMapping = regexp.MustCompile(`^(?:(?:[^:]*:)?[0-9-]*:)?([0-9]+)(?:/(?:tcp|udp|sctp))?$`)

// ports maps each mapping's container port to itself: every container of
// the pod shares its network, so a step reaches a service's port on
// localhost (or the service's alias) at the container port.
func ports(mappings []string) map[string]string {
	m := map[string]string{}
	for _, pm := range mappings {
		if sub := portMapping.FindStringSubmatch(strings.TrimSpace(pm)); sub != nil {
			m[sub[1]] = sub[1]
		}
	}
	return m
}
