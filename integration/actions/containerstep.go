package actions

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/actions/internal/transfer"
)

// Paths of a container step, as the runner translates them for a
// container action (actions/runner ContainerActionHandler.cs).
const (
	// StepWorkspace is the workspace in a container step, its working
	// directory.
	StepWorkspace = "/github/workspace"
	// StepFileCommandsDir holds the file-command files in a container
	// step.
	StepFileCommandsDir = "/github/file_commands"
	// StepRunnerTemp is the runner's _temp in a container step.
	StepRunnerTemp = "/github/runner_temp"
)

// stepContainerPrefix starts the name of every container step's
// ephemeral container; a number follows.
const stepContainerPrefix = "step-"

// stepEnvSecretSuffix ends the name of a container step's env Secret.
const stepEnvSecretSuffix = "-env"

// containerStep is what one container step runs: its ephemeral container
// (a tether-shim), the variables that go into its env Secret, and those
// that go to its program in a variables file over the attach stream
// (shimEnv).
type containerStep struct {
	container corev1.EphemeralContainer
	env       map[string][]byte
	// shimEnv are the step's variables whose names start with
	// kube.ShimEnvPrefix: in the container's environment they would
	// configure its tether-shim (and the shim would keep them from the
	// program), so they reach the program only, as the job's variables
	// file (stepJob).
	shimEnv map[string]string
}

// stepShim is how a container step's ephemeral container runs the job
// pod's tether-shim: its arguments and the mounts that carry it (see
// shimOfPod).
type stepShim struct {
	args   []string
	mounts []corev1.VolumeMount
}

// errDockerfile is the error of a container action built from a
// Dockerfile.
var errDockerfile = errors.New("the container action is built from a Dockerfile, which tether actions cannot build " +
	"(it never runs docker): publish the action's image to a registry and use it with uses: docker://IMAGE " +
	"(or set runs.image in its action.yml to docker://IMAGE)")

// buildContainerStep builds the ephemeral container named name that runs
// a container step: the step's image with the job pod's tether-shim as
// its command (shim; the step's program reaches the shim in its job
// command, see stepArgv), stdin open for attach; the job pod's volumes
// mounted where the job container has them (stepLinks make the /github
// paths of the runner's docker container step); working directory
// StepWorkspace; the env through the Secret secretName (never in the pod
// spec). Variables whose names a Secret cannot hold are reported through
// warn and left out.
func buildContainerStep(args *Container, name, secretName string, shim stepShim, warn func(string, ...any)) (*containerStep, error) {
	if args.Image == "" {
		if args.Dockerfile != "" {
			return nil, errDockerfile
		}
		return nil, errors.New("the container step has no image")
	}
	wd := args.WorkingDirectory
	if wd == "" {
		wd = StepWorkspace
	}
	if err := checkWorkingDirectory(wd); err != nil {
		return nil, err
	}
	ctr := corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: name, Image: args.Image, WorkingDir: wd,
		Command: []string{kube.ShimPath}, Args: slices.Clone(shim.args),
		Stdin: true, StdinOnce: false, TTY: false,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		// Kubernetes forbids subPath mounts in ephemeral containers: the
		// pod's volumes are mounted whole where the job container has
		// them, and stepLinks point the /github paths into them.
		VolumeMounts: append([]corev1.VolumeMount{
			{Name: workVolume, MountPath: WorkDir},
			{Name: githubVolume, MountPath: GitHubDir},
		}, shim.mounts...),
		// The shell's pwd shows the working directory, not the link's
		// target.
		Env: []corev1.EnvVar{{Name: "PWD", Value: wd}},
	}}
	step := &containerStep{container: ctr, env: map[string][]byte{}}
	for k, v := range runnerContainerEnv() {
		step.env[k] = []byte(v)
	}
	names := make([]string, 0, len(args.EnvironmentVariables))
	for k := range args.EnvironmentVariables {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if errs := validation.IsConfigMapKey(k); len(errs) > 0 {
			warn("the step's variable %q cannot be passed to its container (%s): it is not set", k, strings.Join(errs, "; "))
			continue
		}
		if strings.HasPrefix(k, kube.ShimEnvPrefix) {
			if step.shimEnv == nil {
				step.shimEnv = map[string]string{}
			}
			step.shimEnv[k] = args.EnvironmentVariables[k]
			continue
		}
		step.env[k] = []byte(args.EnvironmentVariables[k])
	}
	if len(step.env) > 0 {
		step.container.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: secretName}}}}
	}
	return step, nil
}

// stepJob is the job the step's shim runs: argv, and the step's
// variables of shimEnv in a variables file of the files volume (on top of
// the container's environment, as the rest of the step's variables are
// in it).
// filesDir is the shim's files directory (kube.FilesDir in a pod).
func stepJob(filesDir, id string, argv []string, shimEnv map[string]string) (client.Job, error) {
	job := client.Job{ID: id, Argv: argv}
	if err := job.AddEnvFile(filesDir+"/.env-"+id, shimEnv); err != nil {
		return job, fmt.Errorf("the step's variables: %w", err)
	}
	return job, nil
}

// stepLinks are the symbolic links in the pod's /github volume that give
// a container step the runner's paths (ContainerActionHandler.cs): link →
// target in the work volume. wsSub is the workspace inside it.
func stepLinks(wsSub string) []transfer.Link {
	return []transfer.Link{
		{Link: StepWorkspace, Target: WorkDir + "/" + wsSub},
		{Link: StepFileCommandsDir, Target: FileCommandsDir},
		{Link: StepRunnerTemp, Target: TempDir},
	}
}

// checkSubPath refuses a subPath that is empty, absolute or leaves its
// volume.
func checkSubPath(p string) error {
	if p == "" || path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") || p == "." {
		return fmt.Errorf("%q is not a directory inside the runner's _work", p)
	}
	return nil
}

// workspaceSubPath is the workspace's path inside the work volume (the
// job container's /__w): the runner-host workspace (the source of the
// step's StepWorkspace mount, else the hook's GITHUB_WORKSPACE) relative
// to the runner's _work (the parent of RUNNER_TEMP).
func workspaceSubPath(args *Container, hostWorkspace, runnerTemp string) (string, error) {
	for _, m := range args.SystemMountVolumes {
		if m.TargetVolumePath == StepWorkspace && m.SourceVolumePath != "" {
			hostWorkspace = m.SourceVolumePath
		}
	}
	if hostWorkspace == "" {
		return "", errors.New("the runner named no workspace (no mount at " + StepWorkspace + ", GITHUB_WORKSPACE unset)")
	}
	work := filepath.Dir(filepath.Clean(runnerTemp))
	rel, err := filepath.Rel(work, filepath.Clean(hostWorkspace))
	if err != nil {
		return "", fmt.Errorf("the workspace %s is not under the runner's _work %s: %w", hostWorkspace, work, err)
	}
	rel = filepath.ToSlash(rel)
	if err := checkSubPath(rel); err != nil {
		return "", fmt.Errorf("the workspace %s is not under the runner's _work %s: %w", hostWorkspace, work, err)
	}
	return rel, nil
}

// nextStepName is the name of the pod's next container step: one more
// than the count of its ephemeral containers, skipping a name in use.
func nextStepName(pod *corev1.Pod) string {
	used := map[string]bool{}
	for _, c := range pod.Spec.EphemeralContainers {
		used[c.Name] = true
	}
	for n := len(pod.Spec.EphemeralContainers) + 1; ; n++ {
		name := fmt.Sprintf("%s%d", stepContainerPrefix, n)
		if !used[name] {
			return name
		}
	}
}

// shimOfPod is how a container step named name runs the shim of the job
// pod p: the job container's shim arguments with a spool of its own (on
// the pod's tether volume, so its whole record stream stays for resume),
// a deadline at the job container's (its --deadline counts from that
// shim's start) and its TTL counted from the same start; and the job
// container's mounts under /tether that carry the shim, the pod's
// annotations and the files volume, whole (no subPath is allowed).
//
// The step's shim serves one client, the hook that follows the step: its
// idle timeout is idle (the hook's reconnect budget, at least
// stepShimMinIdle; the job container's is the whole pod's), and it shares no activity file with the pod's
// other shims (the pod's activity would keep it waiting). So a shim the
// hook never reaches — its step cancelled, or the hook gone, before the
// container started — ends idle after its start; one that ran its
// program ends with the step (the hook's job asks it to exit). The job
// container's shim is kept awake during the step by keepShimAwake.
func shimOfPod(p *corev1.Pod, name string, idle time.Duration) (stepShim, error) {
	var build *corev1.Container
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == kube.BuildContainer {
			build = &p.Spec.Containers[i]
		}
	}
	if build == nil || len(build.Command) == 0 || build.Command[0] != kube.ShimPath {
		return stepShim{}, fmt.Errorf("the job's pod %s/%s has no job container running tether-shim (was it made by tether actions?)", p.Namespace, p.Name)
	}
	started := p.CreationTimestamp.Time
	if p.Status.StartTime != nil {
		started = p.Status.StartTime.Time
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == kube.BuildContainer && cs.State.Running != nil {
			started = cs.State.Running.StartedAt.Time
		}
	}
	var s stepShim
	for _, a := range build.Args {
		switch {
		case strings.HasPrefix(a, "--spool-dir="):
			a = "--spool-dir=" + kube.SpoolDir + "-" + name
		case strings.HasPrefix(a, "--deadline="):
			secs, err := strconv.ParseInt(strings.TrimPrefix(a, "--deadline="), 10, 64)
			if err == nil {
				a = "--deadline=" + started.Add(time.Duration(secs)*time.Second).UTC().Format(time.RFC3339)
			}
		case strings.HasPrefix(a, "--created="), strings.HasPrefix(a, "--idle-timeout="), strings.HasPrefix(a, "--activity-file="), a == "--tty":
			continue
		}
		s.args = append(s.args, a)
	}
	s.args = append(s.args, "--created="+started.UTC().Format(time.RFC3339))
	if idle > 0 {
		s.args = append(s.args, "--idle-timeout="+idle.String())
	}
	for _, m := range build.VolumeMounts {
		if (m.MountPath == "/tether" || strings.HasPrefix(m.MountPath, "/tether/")) && m.Name != "scripts" && m.SubPath == "" && m.SubPathExpr == "" {
			s.mounts = append(s.mounts, m)
		}
	}
	return s, nil
}
