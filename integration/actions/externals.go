package actions

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/actionspod"
)

// Settings of the runner's externals (node20, node20_alpine, ...) in the
// job pod, read from the hook's environment at prepare_job.
const (
	// EnvExternalsImage is the image the externals are copied out of;
	// default EnvRunnerImage, else the image of the runner pod's container
	// named runnerContainer (else its first). ExternalsOff turns the copy
	// off.
	EnvExternalsImage = "TETHER_ACTIONS_EXTERNALS_IMAGE"
	// EnvExternalsDir is the externals directory in that image; default
	// DefaultExternalsDir.
	EnvExternalsDir = "TETHER_ACTIONS_EXTERNALS_DIR"
	// EnvRunnerImage is the runner's image as ARC sets it for the
	// reference hook (its fs-init image).
	EnvRunnerImage = "ACTIONS_RUNNER_IMAGE"
	// ExternalsOff as EnvExternalsImage leaves the externals out (jobs with
	// only run: steps start a little faster).
	ExternalsOff = "none"
	// DefaultExternalsDir is the externals directory in ARC's runner image.
	DefaultExternalsDir = actionspod.DefaultExternalsDir
	// ExternalsDir is where the job container sees the externals (read
	// only), as the runner translates them.
	ExternalsDir = actionspod.ExternalsDir
)

// runnerContainer is the name of the runner's container in ARC's runner
// pods.
const runnerContainer = "runner"

// externalsCopy names the externals' kube.ImageCopy (its init container is
// kube.ImageCopyPrefix+externalsCopy).
const externalsCopy = actionspod.ExternalsCopy

// externalsImage is the image the externals come from: the setting, else
// ACTIONS_RUNNER_IMAGE, else the runner pod's runner container's image;
// "" when there is none or the setting is ExternalsOff. guessed is true
// for the runner pod's image, which may keep its externals elsewhere (or
// have none): a missing directory is then no error, the externals are just
// not there.
func externalsImage(getenv func(string) string, runner *corev1.Pod) (image string, guessed bool) {
	if v := strings.TrimSpace(getenv(EnvExternalsImage)); v != "" {
		if v == ExternalsOff {
			return "", false
		}
		return v, false
	}
	if v := strings.TrimSpace(getenv(EnvRunnerImage)); v != "" {
		return v, false
	}
	if runner == nil || len(runner.Spec.Containers) == 0 {
		return "", false
	}
	for _, c := range runner.Spec.Containers {
		if c.Name == runnerContainer {
			return c.Image, true
		}
	}
	return runner.Spec.Containers[0].Image, true
}

// addExternals adds the externals' emptyDir to spec, mounted read-only at
// ExternalsDir, and the init container that fills it from the image; it
// does nothing without an image (externalsImage). A directory missing from
// an image named by a setting fails the pod; from the runner pod's image,
// whose layout is only guessed, it leaves /__e empty.
func addExternals(spec *kube.Spec, getenv func(string) string, runner *corev1.Pod) error {
	image, guessed := externalsImage(getenv, runner)
	if image == "" {
		return nil
	}
	dir := strings.TrimSpace(getenv(EnvExternalsDir))
	if dir == "" {
		dir = DefaultExternalsDir
	} else {
		guessed = false
	}
	if !strings.HasPrefix(dir, "/") {
		return fmt.Errorf("%s=%q: want an absolute path in the image %s", EnvExternalsDir, dir, image)
	}
	return actionspod.Externals{Image: image, Dir: dir, Optional: guessed}.AddTo(spec)
}

// externalsAdvice is what a step that needs a missing external is told.
func externalsAdvice(entryPoint string) string {
	return fmt.Sprintf("%s is not in the job container: the runner's externals did not reach the pod. "+
		"Set %s to an image that has the runner's externals directory (at %s, or say where with %s), "+
		"or unset it if it is %q; by default they come from %s or the runner pod's image",
		entryPoint, EnvExternalsImage, DefaultExternalsDir, EnvExternalsDir, ExternalsOff, EnvRunnerImage)
}

// externalsHint is the advice added to a pod start failure caused by the
// externals' copy: its init container's image cannot be pulled, or the
// container cannot be created or failed.
func externalsHint(err error) string {
	if kube.FailedContainer(err) != kube.ImageCopyPrefix+externalsCopy {
		return ""
	}
	return fmt.Sprintf(" (the runner's externals are copied out of %s's image, directory %s: fix them, or set %s=%s to go without JavaScript actions)",
		EnvExternalsImage, EnvExternalsDir, EnvExternalsImage, ExternalsOff)
}
