package actions

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/actions/hookapi"
	"github.com/tether-ci/tether/integration/actions/internal/ephemeral"
	"github.com/tether-ci/tether/integration/actions/internal/shell"
	"github.com/tether-ci/tether/integration/actions/internal/transfer"
	"github.com/tether-ci/tether/internal/cmdutil"
)

// EnvGitHubWorkspace is the hook's GITHUB_WORKSPACE: the runner-host
// workspace.
const EnvGitHubWorkspace = "GITHUB_WORKSPACE"

// RunContainerStep is run_container_step: it runs the step's image as an
// ephemeral container of the job's pod, which mounts the job's own
// workspace and runner directories; the step's env reaches it through a
// Secret owned by the pod (deleted after the step). The container's
// command is the job pod's tether-shim, which runs the step's program
// (its entry point and arguments, else the image's ENTRYPOINT and CMD read
// from the registry) as a job: its output reaches stdout through the
// shim's records, byte for byte and resumed by offset after a broken
// connection, exactly like a script step's, and the hook exits with the
// program's exit code. The runner's fresh file-command files and event
// payload are delivered first through the job container's shim and the
// file-command files copied back after. An outcome or an output that
// cannot be known complete is a failure.
func RunContainerStep(ctx context.Context, h *Hook, in *hookapi.Input) int {
	return h.run(ctx, runContainerStep, in)
}

func runContainerStep(ctx context.Context, h *Hook, in *hookapi.Input, after *afterExit) error {
	var args hookapi.Container
	st, runnerTemp, err := h.stepInput(in, &args, "which holds the step's file-command files")
	if err != nil {
		return err
	}
	if args.Image == "" && args.Dockerfile != "" {
		return errDockerfile
	}
	wsSub, err := workspaceSubPath(&args, h.Getenv(EnvGitHubWorkspace), runnerTemp)
	if err != nil {
		return fmt.Errorf("run_container_step: %w", err)
	}
	stepArgs, err := shell.SplitArgs(args.EntryPointArgs)
	if err != nil {
		return fmt.Errorf("run_container_step: %w", err)
	}
	c, err := h.connect()
	if err != nil {
		return err
	}
	pod := c.pod(h, st)
	files, fileCmds, err := containerStepFiles(args.EnvironmentVariables, runnerTemp, h.warn)
	if err != nil {
		return fmt.Errorf("run_container_step: %w", err)
	}
	if args.Registry != nil && (args.Registry.Username != "" || args.Registry.Password != "") {
		if err := addStepCredentials(ctx, h, c, st, args.Registry); err != nil {
			return err
		}
	}
	argv, err := stepArgv(args.EntryPoint, stepArgs, func() (imageCommand, error) {
		return readImageCommand(ctx, args.Image, pullConfig(ctx, h, c, st))
	})
	if err != nil {
		return fmt.Errorf("run_container_step: %w", err)
	}
	from, err := deliverFiles(ctx, h, c, pod, files, stepLinks(wsSub))
	if err != nil {
		return fmt.Errorf("cannot deliver the step's files into the job's pod %s/%s: %w", st.Namespace, st.Pod, err)
	}
	// Until the step ended; stopped before the file commands are read
	// through the shim, so no other client is on it then.
	awake, stopAwake := context.WithCancel(ctx)
	awakeDone := make(chan struct{})
	go func() { defer close(awakeDone); keepShimAwake(awake, h, c, pod, from) }()
	defer func() { stopAwake(); <-awakeDone }()
	name, shimEnv, err := startContainerStep(ctx, h, c, st, &args)
	if err != nil {
		return err
	}
	// The container read its env when it started: the Secret goes after
	// the step, whatever its end.
	after.add(func(bool) { deleteStepSecret(ctx, h, c, st.Namespace, st.Pod+"-"+name+stepEnvSecretSuffix) })
	job, err := stepJob(kube.FilesDir, st.Pod+"-"+name, argv, shimEnv)
	if err != nil {
		return err
	}
	res, err := followContainerStep(ctx, h, c, st, name, job)
	stopAwake()
	<-awakeDone
	if err != nil {
		return err
	}
	h.warnReconnects(st, res.Reconnects)
	if len(fileCmds) > 0 {
		if err := collectFileCommands(ctx, h, c, pod, from, fileCmds, nil); err != nil {
			return fileCommandsError(res.ExitCode, err)
		}
	}
	return stepResult(res.ExitCode)
}

// stepShimMinIdle is the shortest idle timeout of a container step's shim
// (shimOfPod): the kubelet may report the container running seconds after
// it started, and only then does the hook reach it.
const stepShimMinIdle = time.Minute

// reconnectBudget is how long a step may stay unreachable: the
// ReconnectTimeout setting, else client's default.
func (h *Hook) reconnectBudget() time.Duration {
	if h.Settings.ReconnectTimeout > 0 {
		return h.Settings.ReconnectTimeout
	}
	return client.DefaultReconnectTimeout
}

// pullConfig is the job pod's pull Secret's .dockerconfigjson (with the
// step's own credentials, added before), nil when it has none or cannot be
// read (then the registry is read anonymously, and says so if it must not).
func pullConfig(ctx context.Context, h *Hook, c *cluster, st *hookapi.State) []byte {
	sec, err := c.cs.CoreV1().Secrets(st.Namespace).Get(ctx, st.Pod+pullSecretSuffix, metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			h.logger().Debug("cannot read the job pod's pull Secret: reading the image's config without credentials", "err", err)
		}
		return nil
	}
	return sec.Data[corev1.DockerConfigJsonKey]
}

// startContainerStep creates the step's env Secret and adds its ephemeral
// container, a tether-shim, to the pod. It returns the container's name
// and the variables its program gets over the stream (containerStep's
// shimEnv); on an error its Secret is deleted again.
func startContainerStep(ctx context.Context, h *Hook, c *cluster, st *hookapi.State, args *Container) (string, map[string]string, error) {
	pods := c.cs.CoreV1().Pods(st.Namespace)
	for attempt := 0; ; attempt++ {
		p, err := pods.Get(ctx, st.Pod, metav1.GetOptions{})
		if err != nil {
			return "", nil, fmt.Errorf("cannot read the job's pod %s/%s: %w", st.Namespace, st.Pod, err)
		}
		name := nextStepName(p)
		secret := st.Pod + "-" + name + stepEnvSecretSuffix
		shim, err := shimOfPod(p, name, max(h.reconnectBudget(), stepShimMinIdle))
		if err != nil {
			return "", nil, fmt.Errorf("run_container_step: %w", err)
		}
		step, err := buildContainerStep(args, name, secret, shim, h.warn)
		if err != nil {
			return "", nil, fmt.Errorf("run_container_step: %w", err)
		}
		step.container.ImagePullPolicy = h.Settings.PullPolicy
		for _, jc := range p.Spec.Containers {
			if jc.Name == kube.BuildContainer && jc.SecurityContext != nil {
				step.container.SecurityContext = jc.SecurityContext.DeepCopy()
			}
		}
		warn := h.warn
		if attempt > 0 {
			warn = func(string, ...any) {} // said on the first attempt
		}
		if err := shapeStep(&step.container, h.Getenv(EnvHookTemplate), warn); err != nil {
			return "", nil, fmt.Errorf("run_container_step: %w", err)
		}
		if len(step.env) > 0 {
			if err := createStepSecret(ctx, c, p, secret, step.env); err != nil {
				return "", nil, err
			}
		}
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, step.container)
		_, err = pods.UpdateEphemeralContainers(ctx, st.Pod, p, metav1.UpdateOptions{})
		if err == nil {
			return name, step.shimEnv, nil
		}
		if len(step.env) > 0 {
			deleteStepSecret(ctx, h, c, st.Namespace, secret)
		}
		if apierrors.IsConflict(err) && attempt < 5 {
			continue // another writer changed the pod: read it again
		}
		return "", nil, fmt.Errorf("cannot add the step's container to the job's pod %s/%s: %w", st.Namespace, st.Pod, err)
	}
}

// followContainerStep waits for the step's container to start and runs
// job (stepJob) in it through its shim, its stdout to stdout and its stderr to
// stderr. A container that cannot start fails the step; a cancel through ctx cancels the program
// (a cancelledError); an end that cannot be known is an
// unknownOutcomeError.
func followContainerStep(ctx context.Context, h *Hook, c *cluster, st *hookapi.State, name string, job client.Job) (client.Result, error) {
	if err := ephemeral.WaitRunning(ctx, c.cs.CoreV1(), st.Namespace, st.Pod, name, h.reconnectBudget()); err != nil {
		if ctx.Err() != nil {
			return client.Result{}, &cancelledError{cause: context.Cause(ctx)}
		}
		return client.Result{}, &unknownOutcomeError{err: err}
	}
	p := &kube.Pod{Client: c.cs, Namespace: st.Namespace, Name: st.Pod, Container: name, Logger: h.logger()}
	t := p.Transport(c.cfg, kube.TransportOptions{Logger: h.logger()})
	res, err := client.Run(ctx, t, job,
		client.Options{Output: h.Stdout, Stderr: h.Stderr, Logger: h.logger(), ReconnectTimeout: h.Settings.ReconnectTimeout, ExitShim: true})
	switch {
	case res.Cancelled:
		return res, &cancelledError{cause: context.Cause(ctx), detail: cmdutil.CancelledCode(res)}
	case err != nil:
		return res, &unknownOutcomeError{err: err}
	}
	return res, nil
}

// containerStepFiles are the files a container step needs in the pod (its
// fresh file-command files, the event payload) and the file-command files
// to copy back after it. The step's variables name the file-command files
// under StepFileCommandsDir; the job container has them under
// FileCommandsDir.
func containerStepFiles(env map[string]string, runnerTemp string, warn func(string, ...any)) ([]transfer.File, []fileCommand, error) {
	var files []transfer.File
	var cmds []fileCommand
	seen := map[string]bool{}
	for _, v := range fileCommandVars {
		p := env[v]
		if p == "" || seen[p] {
			continue
		}
		rel, ok := cutDir(p, StepFileCommandsDir)
		if !ok {
			warn("%s=%s is not under %s: it is not copied back to the runner", v, p, StepFileCommandsDir)
			continue
		}
		seen[p] = true
		jobPath := FileCommandsDir + "/" + rel
		host, _ := hostTempPath(runnerTemp, jobPath)
		b, err := readOptional(host)
		if err != nil {
			return nil, nil, fmt.Errorf("read the file-command file %s: %w", host, err)
		}
		files = append(files, transfer.File{Container: jobPath, Content: b, Shared: true})
		cmds = append(cmds, fileCommand{container: jobPath, host: host})
	}
	b, err := readOptional(hostWorkflowEvent(runnerTemp))
	if err != nil {
		return nil, nil, fmt.Errorf("read the event payload: %w", err)
	}
	if b != nil {
		files = append(files, transfer.File{Container: WorkflowDir + "/event.json", Content: b})
	}
	return files, cmds, nil
}

// cutDir returns p's name inside dir when p is a file directly in dir.
func cutDir(p, dir string) (string, bool) {
	rel, ok := strings.CutPrefix(p, dir+"/")
	if !ok || rel == "" || path.Base(rel) != rel || rel == ".." || rel == "." {
		return "", false
	}
	return rel, true
}
