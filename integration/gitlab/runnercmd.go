package gitlab

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/tether-ci/tether/client/kube"
	gitlab "github.com/tether-ci/tether/integration/gitlab/internal/runnerapi"
	"github.com/tether-ci/tether/protocol"
)

// helloTimeout bounds prepare's read of the hello of the shim that runs
// the cache and artifact stages (a running container's shim wrote it
// within milliseconds of its start).
const helloTimeout = 10 * time.Second

// checkRunnerCommand prints, once, a warning to the job log (out) when
// the job has caches or artifacts and the container that runs their
// stages — the helper container, else the build container — can run
// neither gitlab-runner nor gitlab-runner-helper, as its shim's hello
// reports. It reads the hello only for such jobs; a hello it cannot read
// is logged and nothing is printed: the job goes on either way.
func checkRunnerCommand(ctx context.Context, pod *kube.Pod, job *gitlab.Job, helperImage, buildImage string, out io.Writer, log *slog.Logger) {
	what := job.CachesAndArtifacts()
	if what == "" {
		return
	}
	shim := &kube.Pod{Client: pod.Client, Namespace: pod.Namespace, Name: pod.Name, Container: kube.BuildContainer}
	if helperImage != "" {
		shim.Container = kube.HelperContainer
	}
	ctx, cancel := context.WithTimeout(ctx, helloTimeout)
	defer cancel()
	start := time.Now()
	hello, err := shim.Hello(ctx)
	if err != nil {
		log.Debug("cannot tell whether the job's stages can run "+gitlab.RunnerCommand, "err", err)
		return
	}
	log.Debug("read the shim's hello", "container", shim.Container, "took", time.Since(start), "command_aliases", hello.CommandAliases)
	if line := runnerCommandWarning(what, hello, helperImage, buildImage); line != "" {
		fmt.Fprintln(out, line)
	}
}

// runnerCommandWarning is the job-log line for a job whose caches or
// artifacts (what) the runner's stage scripts handle with gitlab-runner,
// when hello (of the shim in the helper container, or in the build
// container where helperImage is "") says its scripts cannot run it; ""
// when they can, or the shim did not say (one older than the alias).
func runnerCommandWarning(what string, hello protocol.Hello, helperImage, buildImage string) string {
	var alias *protocol.CommandAlias
	for i, a := range hello.CommandAliases {
		if a.Name == gitlab.RunnerCommand {
			alias = &hello.CommandAliases[i]
		}
	}
	if what == "" || alias == nil || !alias.Missing() {
		return ""
	}
	where := fmt.Sprintf("the helper container's image %s", helperImage)
	fix := fmt.Sprintf("set gitlab-helper-image in the driver config to an image that has %s, such as GitLab's helper image", gitlab.RunnerHelperCommand)
	if helperImage == "" {
		where = fmt.Sprintf("the build container's image %s (gitlab-helper-image is %s, so these stages run there)", buildImage, gitlabNoHelper)
		fix = fmt.Sprintf("set gitlab-helper-image in the driver config to an image that has %s, such as GitLab's helper image, or use a job image that has it", gitlab.RunnerHelperCommand)
	}
	if alias.Error != "" {
		return fmt.Sprintf("WARNING: tether: this job's %s will not be saved or restored: %s has %s, but it could not be offered as %s (%s)",
			what, where, gitlab.RunnerHelperCommand, gitlab.RunnerCommand, alias.Error)
	}
	return fmt.Sprintf("WARNING: tether: this job's %s will not be saved or restored: %s has neither %s nor %s on its PATH; %s",
		what, where, gitlab.RunnerHelperCommand, gitlab.RunnerCommand, fix)
}

// helperImageOf is the image of spec's helper container ("" for none).
func helperImageOf(spec kube.Spec) string {
	if spec.Helper == nil {
		return ""
	}
	return spec.Helper.Image
}
