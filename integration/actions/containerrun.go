package actions

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/cmdutil"
)

// EnvGitHubWorkspace is the hook's GITHUB_WORKSPACE: the runner-host
// workspace.
const EnvGitHubWorkspace = "GITHUB_WORKSPACE"

// startPoll is how often a container step's status is read while it
// starts.
const startPoll = 200 * time.Millisecond

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
func RunContainerStep(ctx context.Context, h *Hook, in *Input) int {
	st, err := podState(in.State)
	if err != nil {
		return h.fail("run_container_step: %v", err)
	}
	var args Container
	if err := decodeArgs(in, &args); err != nil {
		return h.fail("%v", err)
	}
	if args.Image == "" && args.Dockerfile != "" {
		return h.fail("%v", errDockerfile)
	}
	runnerTemp := h.Getenv(EnvRunnerTemp)
	if runnerTemp == "" {
		return h.fail("%s is not set: the runner sets it to its _work/_temp, which holds the step's file-command files", EnvRunnerTemp)
	}
	wsSub, err := workspaceSubPath(&args, h.Getenv(EnvGitHubWorkspace), runnerTemp)
	if err != nil {
		return h.fail("run_container_step: %v", err)
	}
	stepArgs, err := splitArgs(args.EntryPointArgs)
	if err != nil {
		return h.fail("run_container_step: %v", err)
	}
	c, err := h.connect()
	if err != nil {
		return h.fail("%v", err)
	}
	pod := c.pod(h, st)
	files, fileCmds, err := containerStepFiles(args.EnvironmentVariables, runnerTemp, h.warn)
	if err != nil {
		return h.fail("run_container_step: %v", err)
	}
	if args.Registry != nil && (args.Registry.Username != "" || args.Registry.Password != "") {
		if err := addStepCredentials(ctx, h, c, st, args.Registry); err != nil {
			return h.fail("%v", err)
		}
	}
	argv, err := stepArgv(args.EntryPoint, stepArgs, func() (imageCommand, error) {
		return readImageCommand(ctx, args.Image, pullConfig(ctx, h, c, st))
	})
	if err != nil {
		return h.fail("run_container_step: %v", err)
	}
	from, err := deliverFiles(ctx, h, c, pod, files, stepLinks(wsSub))
	if err != nil {
		return h.fail("cannot deliver the step's files into the job's pod %s/%s: %v", st.Namespace, st.Pod, err)
	}
	// Until the step ended; stopped before the file commands are read
	// through the shim, so no other client is on it then.
	awake, stopAwake := context.WithCancel(ctx)
	awakeDone := make(chan struct{})
	go func() { defer close(awakeDone); keepShimAwake(awake, h, c, pod, from) }()
	defer func() { stopAwake(); <-awakeDone }()
	name, err := startContainerStep(ctx, h, c, st, &args)
	if err != nil {
		return h.fail("%v", err)
	}
	// The container read its env when it started: the Secret goes after
	// the step, whatever its end.
	defer deleteStepSecret(ctx, h, c, st.Namespace, st.Pod+"-"+name+stepEnvSecretSuffix)
	res, err := runContainerStep(ctx, h, c, st, name, argv)
	stopAwake()
	<-awakeDone
	switch {
	case res.Cancelled:
		return h.fail("the step was cancelled (%v)%s", context.Cause(ctx), cmdutil.CancelledCode(res))
	case err != nil:
		return h.fail("the step's outcome is unknown, so it failed: %v", err)
	}
	if res.Reconnects > 0 {
		h.warn("the connection to the job's pod %s/%s broke %d times while the step ran; the step ran on and its output resumed where it stopped, nothing lost or repeated",
			st.Namespace, st.Pod, res.Reconnects)
	}
	if len(fileCmds) > 0 {
		if err := collectFileCommands(ctx, h, c, pod, from, fileCmds, nil); err != nil {
			return h.fail("the step ended with exit code %d, but its file commands (GITHUB_ENV, GITHUB_OUTPUT, ...) could not be copied back to the runner: %v", res.ExitCode, err)
		}
	}
	return exitCode(int32(res.ExitCode))
}

// pullConfig is the job pod's pull Secret's .dockerconfigjson (with the
// step's own credentials, added before), nil when it has none or cannot be
// read (then the registry is read anonymously, and says so if it must not).
func pullConfig(ctx context.Context, h *Hook, c *cluster, st *State) []byte {
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
// container, a tether-shim, to the pod. It returns the container's name;
// on an error its Secret is deleted again.
func startContainerStep(ctx context.Context, h *Hook, c *cluster, st *State, args *Container) (string, error) {
	pods := c.cs.CoreV1().Pods(st.Namespace)
	for attempt := 0; ; attempt++ {
		p, err := pods.Get(ctx, st.Pod, metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("cannot read the job's pod %s/%s: %w", st.Namespace, st.Pod, err)
		}
		name := nextStepName(p)
		secret := st.Pod + "-" + name + stepEnvSecretSuffix
		shim, err := shimOfPod(p, name)
		if err != nil {
			return "", fmt.Errorf("run_container_step: %w", err)
		}
		step, err := buildContainerStep(args, name, secret, shim, h.warn)
		if err != nil {
			return "", fmt.Errorf("run_container_step: %w", err)
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
			return "", fmt.Errorf("run_container_step: %w", err)
		}
		if len(step.env) > 0 {
			if err := createStepSecret(ctx, c, p, secret, step.env); err != nil {
				return "", err
			}
		}
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, step.container)
		_, err = pods.UpdateEphemeralContainers(ctx, st.Pod, p, metav1.UpdateOptions{})
		if err == nil {
			return name, nil
		}
		if len(step.env) > 0 {
			deleteStepSecret(ctx, h, c, st.Namespace, secret)
		}
		if apierrors.IsConflict(err) && attempt < 5 {
			continue // another writer changed the pod: read it again
		}
		return "", fmt.Errorf("cannot add the step's container to the job's pod %s/%s: %w", st.Namespace, st.Pod, err)
	}
}

// runContainerStep waits for the step's container to start and runs argv
// in it through its shim, its stdout to stdout and its stderr to stderr. A container that cannot
// start fails the step; a cancel through ctx cancels the program
// (Result.Cancelled).
func runContainerStep(ctx context.Context, h *Hook, c *cluster, st *State, name string, argv []string) (client.Result, error) {
	if err := waitStepStarted(ctx, h, c, st, name); err != nil {
		if ctx.Err() != nil {
			return client.Result{Cancelled: true}, err
		}
		return client.Result{}, err
	}
	p := &kube.Pod{Client: c.cs, Namespace: st.Namespace, Name: st.Pod, Container: name, Logger: h.logger()}
	t := p.Transport(c.cfg, kube.TransportOptions{Logger: h.logger()})
	return client.Run(ctx, t, client.Job{ID: st.Pod + "-" + name, Argv: argv},
		client.Options{Output: h.Stdout, Stderr: h.Stderr, Logger: h.logger(), ReconnectTimeout: h.Settings.ReconnectTimeout, ExitShim: true})
}

// waitStepStarted waits until the step's container runs. One that cannot
// start, or a pod that cannot be read for the reconnect timeout, is an
// error.
func waitStepStarted(ctx context.Context, h *Hook, c *cluster, st *State, name string) error {
	pods := c.cs.CoreV1().Pods(st.Namespace)
	budget := h.Settings.ReconnectTimeout
	if budget <= 0 {
		budget = client.DefaultReconnectTimeout
	}
	lastOK := time.Now()
	for {
		if ctx.Err() != nil {
			return fmt.Errorf("cancelled while its container started: %w", context.Cause(ctx))
		}
		p, err := pods.Get(ctx, st.Pod, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("the job's pod %s/%s is gone", st.Namespace, st.Pod)
		case err != nil:
			if time.Since(lastOK) > budget {
				return fmt.Errorf("the job's pod %s/%s could not be read for %v: %w", st.Namespace, st.Pod, budget, err)
			}
		default:
			lastOK = time.Now()
			cs := stepStatus(p, name)
			switch {
			case cs != nil && cs.State.Running != nil:
				return nil
			case cs != nil && cs.State.Terminated != nil:
				t := cs.State.Terminated
				return fmt.Errorf("the step's container (image %s) ended as it started, before its program ran: exit code %d, %s: %s", cs.Image, t.ExitCode, t.Reason, t.Message)
			case cs != nil && cs.State.Waiting != nil && kube.FatalWaiting(cs.State.Waiting.Reason):
				return fmt.Errorf("the step's container (image %s) cannot start: %s: %s", cs.Image, cs.State.Waiting.Reason, cs.State.Waiting.Message)
			case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
				return fmt.Errorf("the job's pod %s/%s ended (%s) before the step's container ran", st.Namespace, st.Pod, p.Status.Phase)
			}
		}
		sleep(ctx, startPoll)
	}
}

// stepStatus is the status of the pod's ephemeral container name.
func stepStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range p.Status.EphemeralContainerStatuses {
		if p.Status.EphemeralContainerStatuses[i].Name == name {
			return &p.Status.EphemeralContainerStatuses[i]
		}
	}
	return nil
}

// exitCode is the hook's exit code for a container's: 1 outside 1..255.
func exitCode(code int32) int {
	if code >= 0 && code < 256 {
		return int(code)
	}
	return 1
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// containerStepFiles are the files a container step needs in the pod (its
// fresh file-command files, the event payload) and the file-command files
// to copy back after it. The step's variables name the file-command files
// under StepFileCommandsDir; the job container has them under
// FileCommandsDir.
func containerStepFiles(env map[string]string, runnerTemp string, warn func(string, ...any)) ([]deliveredFile, []fileCommand, error) {
	var files []deliveredFile
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
		files = append(files, deliveredFile{container: jobPath, content: b, shared: true})
		cmds = append(cmds, fileCommand{container: jobPath, host: host})
	}
	b, err := readOptional(hostWorkflowEvent(runnerTemp))
	if err != nil {
		return nil, nil, fmt.Errorf("read the event payload: %w", err)
	}
	if b != nil {
		files = append(files, deliveredFile{container: WorkflowDir + "/event.json", content: b})
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

// deliverFiles writes files and makes links in the job container
// through its shim and returns the shim's stream offset after it (where the next job's output
// starts).
func deliverFiles(ctx context.Context, h *Hook, c *cluster, pod *kube.Pod, files []deliveredFile, links [][2]string) (int64, error) {
	log := h.logger()
	from, err := client.StreamEnd(ctx, c.transport(h, pod), 0, client.Options{Logger: log})
	if err != nil {
		return 0, fmt.Errorf("cannot reach the job container: %w", err)
	}
	job := deliveryJob("deliver-"+strconv.FormatInt(time.Now().UnixNano(), 36), files, links)
	var out lockedBuffer
	res, err := kube.Run(ctx, c.transport(h, pod), job,
		client.Options{Output: &out, Logger: log, From: from, ReconnectTimeout: h.Settings.ReconnectTimeout})
	if err != nil {
		return 0, err
	}
	if res.ExitCode != 0 {
		return 0, fmt.Errorf("the copy in the job container failed with exit code %d: %s", res.ExitCode, firstLine(out.Bytes()))
	}
	return res.Offset, nil
}
