package actions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
)

// EnvGitHubWorkspace is the hook's GITHUB_WORKSPACE: the runner-host
// workspace.
const EnvGitHubWorkspace = "GITHUB_WORKSPACE"

// pollInterval is how often a container step's status is read while it
// starts and after its log ends.
const pollInterval = 500 * time.Millisecond

// errUnstoppable is said when a container step is cancelled after it was
// added to the pod.
const errUnstoppable = "the step's container cannot be stopped through the Kubernetes API (an ephemeral container has no stop): " +
	"it runs on until it ends, the job's pod reaches its deadline, or cleanup_job deletes the pod"

// RunContainerStep is run_container_step: it runs the step's image as an
// ephemeral container of the job's pod, which mounts the job's own
// workspace and runner directories; the step's env reaches it through a
// Secret owned by the pod (deleted after the step). The runner's fresh
// file-command files and event payload are delivered first through the
// job container's shim and the file-command files copied back after; the
// container's log is followed byte-exact (resuming after a broken
// connection), and the hook exits with the container's exit code as the
// kubelet reports it. An outcome that cannot be known is a failure.
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
	c, err := h.connect()
	if err != nil {
		return h.fail("%v", err)
	}
	pod := c.pod(h, st)
	files, fileCmds, err := containerStepFiles(args.EnvironmentVariables, runnerTemp, h.warn)
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
	if args.Registry != nil && (args.Registry.Username != "" || args.Registry.Password != "") {
		if err := addStepCredentials(ctx, h, c, st, args.Registry); err != nil {
			return h.fail("%v", err)
		}
	}
	name, code := startContainerStep(ctx, h, c, st, &args)
	if name == "" {
		return code
	}
	// The container read its env when it started: the Secret goes after
	// the step, whatever its end.
	defer deleteStepSecret(ctx, h, c, st.Namespace, st.Pod+"-"+name+stepEnvSecretSuffix)
	code = followContainerStep(ctx, h, c, st, name)
	stopAwake()
	<-awakeDone
	if code < 0 {
		return h.fail("the step was cancelled (%v); %s", context.Cause(ctx), errUnstoppable)
	}
	if len(fileCmds) > 0 {
		if err := collectFileCommands(ctx, h, c, pod, from, fileCmds); err != nil {
			return h.fail("the step ended with exit code %d, but its file commands (GITHUB_ENV, GITHUB_OUTPUT, ...) could not be copied back to the runner: %v", code, err)
		}
	}
	return code
}

// startContainerStep creates the step's env Secret and adds its ephemeral
// container to the pod. It returns the container's name, or "" and the
// hook's exit code when it failed (its Secret is then deleted again).
func startContainerStep(ctx context.Context, h *Hook, c *cluster, st *State, args *Container) (string, int) {
	pods := c.cs.CoreV1().Pods(st.Namespace)
	for attempt := 0; ; attempt++ {
		p, err := pods.Get(ctx, st.Pod, metav1.GetOptions{})
		if err != nil {
			return "", h.fail("cannot read the job's pod %s/%s: %v", st.Namespace, st.Pod, err)
		}
		name := nextStepName(p)
		secret := st.Pod + "-" + name + stepEnvSecretSuffix
		step, err := buildContainerStep(args, name, secret, h.warn)
		if err != nil {
			return "", h.fail("run_container_step: %v", err)
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
			return "", h.fail("run_container_step: %v", err)
		}
		if len(step.env) > 0 {
			if err := createStepSecret(ctx, c, p, secret, step.env); err != nil {
				return "", h.fail("%v", err)
			}
		}
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, step.container)
		_, err = pods.UpdateEphemeralContainers(ctx, st.Pod, p, metav1.UpdateOptions{})
		if err == nil {
			return name, 0
		}
		if len(step.env) > 0 {
			deleteStepSecret(ctx, h, c, st.Namespace, secret)
		}
		if apierrors.IsConflict(err) && attempt < 5 {
			continue // another writer changed the pod: read it again
		}
		return "", h.fail("cannot add the step's container to the job's pod %s/%s: %v", st.Namespace, st.Pod, err)
	}
}

// followContainerStep waits for the step's container to start, follows
// its log to stdout and returns its exit code (1 for a code outside
// 1..255), or -1 when ctx ended. A container that cannot start, or whose
// outcome cannot be known, is reported and fails the step.
func followContainerStep(ctx context.Context, h *Hook, c *cluster, st *State, name string) int {
	pods := c.cs.CoreV1().Pods(st.Namespace)
	budget := h.Settings.ReconnectTimeout
	if budget <= 0 {
		budget = client.DefaultReconnectTimeout
	}
	cur := &logCursor{out: h.Stdout}
	lastOK := time.Now() // the pod was last read
	logOK := lastOK      // the log was last read to its end
	reconnects := 0
	final := false
	started := false
	for {
		if ctx.Err() != nil {
			return -1
		}
		p, err := pods.Get(ctx, st.Pod, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return h.fail("the job's pod %s/%s is gone: the step's outcome is unknown, so it failed", st.Namespace, st.Pod)
		case err != nil:
			if ctx.Err() != nil {
				return -1
			}
			if time.Since(lastOK) > budget {
				return h.fail("the step's outcome is unknown, so it failed: the job's pod %s/%s could not be read for %v: %v", st.Namespace, st.Pod, budget, err)
			}
			sleep(ctx, pollInterval)
			continue
		}
		lastOK = time.Now()
		cs := stepStatus(p, name)
		var term *corev1.ContainerStateTerminated
		switch {
		case cs != nil && cs.State.Terminated != nil:
			term = cs.State.Terminated
			final = true
		case cs != nil && cs.State.Running != nil:
			started = true
		case cs != nil && cs.State.Waiting != nil && fatalWaiting[cs.State.Waiting.Reason]:
			return h.fail("the step's container (image %s) cannot start: %s: %s", cs.Image, cs.State.Waiting.Reason, cs.State.Waiting.Message)
		case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
			return h.fail("the job's pod %s/%s ended (%s) before the step's container ran: the step failed", st.Namespace, st.Pod, p.Status.Phase)
		}
		if !started && !final {
			sleep(ctx, pollInterval)
			continue
		}
		err = readStepLog(ctx, c, st, name, cur, !final)
		var werr *writeError
		switch {
		case ctx.Err() != nil:
			return -1
		case errors.As(err, &werr):
			return h.fail("%v", err)
		case err == nil && final:
			if reconnects > 0 {
				h.warn("the connection to the job's pod %s/%s broke %d times while the step ran; the step ran on and its output resumed where it stopped, nothing lost or repeated",
					st.Namespace, st.Pod, reconnects)
			}
			return exitCode(term.ExitCode)
		case err != nil:
			h.logger().Debug("the step's log broke", "container", name, "err", err)
			if !final {
				reconnects++
			}
			if time.Since(logOK) > budget {
				return h.fail("the step's outcome is unknown, so it failed: its log could not be read for %v: %v", budget, err)
			}
		default:
			logOK = time.Now()
		}
		sleep(ctx, pollInterval)
	}
}

// writeError is a failure to write the step's output (not the log's).
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

// readStepLog reads the step container's log (following it while it
// runs) into cur, from where cur stopped.
func readStepLog(ctx context.Context, c *cluster, st *State, name string, cur *logCursor, follow bool) error {
	opts := &corev1.PodLogOptions{Container: name, Follow: follow, Timestamps: true}
	if t := cur.since(); !t.IsZero() {
		opts.SinceTime = &metav1.Time{Time: t}
	}
	cur.reset()
	rc, err := c.cs.CoreV1().Pods(st.Namespace).GetLogs(st.Pod, opts).Stream(ctx)
	if err != nil {
		return fmt.Errorf("open the log of the step's container %s: %w", name, err)
	}
	defer rc.Close()
	buf := make([]byte, 32<<10)
	for {
		n, rerr := rc.Read(buf)
		if n > 0 {
			if _, err := cur.Write(buf[:n]); err != nil {
				return &writeError{err}
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return fmt.Errorf("read the log of the step's container %s: %w", name, rerr)
		}
	}
}

// fatalWaiting are the reasons a container waits for that do not go away
// by waiting: the step fails with them.
var fatalWaiting = map[string]bool{
	"ImagePullBackOff": true, "ErrImageNeverPull": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
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
