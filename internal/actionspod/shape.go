// Package actionspod is the shape `tether actions` gives a GitHub Actions
// job's pod before the workflow's container options and the hook
// template: the job container's image running a serving tether-shim, the
// runner's directories as emptyDirs, the services as native sidecars, the
// runner's externals copied in by an init container, a pull Secret named
// after the pod, and the pod settings. The hook's prepare_job builds its
// job pods with it, and a pool for Actions jobs (`for: actions` in the
// pools file) builds its warm pods with it, so both hash alike
// (kube.PoolHash) and a job can claim such a pod.
package actionspod

import (
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/settings"
)

// Paths inside the job container, as the runner translates them
// (actions/runner ContainerOperationProvider.cs).
const (
	// WorkDir is the runner's _work directory in the container.
	WorkDir = "/__w"
	// GitHubDir holds the job container's HOME and the event payload.
	GitHubDir = "/github"
	// ExternalsDir is where the job container sees the runner's externals
	// (read only).
	ExternalsDir = "/__e"
	// DefaultExternalsDir is the externals directory in ARC's runner image.
	DefaultExternalsDir = "/home/runner/externals"
)

// Names of the job pod's own volumes (emptyDirs) and of the externals'
// copy (its init container is kube.ImageCopyPrefix+ExternalsCopy).
const (
	WorkVolume      = "actions-work"
	GitHubVolume    = "actions-github"
	ExternalsVolume = "actions-externals"
	ExternalsCopy   = "externals"
)

// ContainerEnv are the variables the runner gives every container it
// starts (job container, services, container steps) before the
// container's own, which win: GITHUB_ACTIONS=true and CI=true (actions/runner
// DockerCommandManager.cs, DockerCreate).
func ContainerEnv() map[string]string {
	return map[string]string{"GITHUB_ACTIONS": "true", "CI": "true"}
}

// Service is one service container of the job, as the workflow gives it.
type Service struct {
	// Image is the service's image. Required.
	Image string
	// EntryPoint replaces the image's entrypoint ("" keeps it).
	EntryPoint string
	// Args are the entry point's arguments.
	Args []string
	// Env are the service's variables (on top of ContainerEnv).
	Env map[string]string
}

// Externals say where the runner's externals (node20, …) come from: an
// image and the directory in it, copied into an emptyDir at ExternalsDir
// by an init container.
type Externals struct {
	// Image holds the externals. Required.
	Image string
	// Dir is the externals directory in Image ("" DefaultExternalsDir).
	Dir string
	// Optional leaves ExternalsDir empty when Dir is missing from Image
	// (the image was guessed) instead of failing the pod.
	Optional bool
}

// Shape is an Actions job's pod before the workflow's container options
// and the hook template.
type Shape struct {
	// Namespace of the pod.
	Namespace string
	// Image is the job container's image. Required.
	Image string
	// HelperImage carries tether-shim ("" the project's default).
	HelperImage string
	// PullPolicy of every image of the pod ("" Kubernetes' default).
	PullPolicy corev1.PullPolicy
	// Pod are the shared pod settings; ServiceAccount and NodeSelector
	// win over theirs.
	Pod settings.Pod
	// ServiceAccount runs the pod ("" the settings' or the namespace's).
	ServiceAccount string
	// NodeSelector is added to the settings' node selector.
	NodeSelector map[string]string
	// Services are the job's services, in the workflow's order.
	Services []Service
	// Externals, when set, are copied into the pod.
	Externals *Externals
}

// Spec returns the kube.Spec of the pod: a serving pod of the job
// container's image with the settings' pod shaping, the runner's
// directories, the services (each reached on localhost and under its
// image's name, ServiceAlias), the externals and the pod's own pull
// Secret (kube.Spec.OwnPullSecret). It holds no job data: the caller adds
// the job's variables, timeouts and labels (or claims a warm pod that
// hashes equal). An error names the setting or service that is wrong.
func (sh Shape) Spec() (kube.Spec, error) {
	if sh.Image == "" {
		return kube.Spec{}, fmt.Errorf("actionspod: the job container has no image")
	}
	spec := kube.Spec{
		Namespace: sh.Namespace, Image: sh.Image, HelperImage: sh.HelperImage, Serve: true,
		PullPolicy: sh.PullPolicy, OwnPullSecret: true,
	}
	if err := sh.Pod.ApplyTo(&spec); err != nil {
		return spec, err
	}
	if sh.ServiceAccount != "" {
		spec.ServiceAccountName = sh.ServiceAccount
	}
	if len(sh.NodeSelector) > 0 {
		if spec.NodeSelector == nil {
			spec.NodeSelector = map[string]string{}
		}
		maps.Copy(spec.NodeSelector, sh.NodeSelector)
	}
	for _, v := range []struct{ name, path string }{{WorkVolume, WorkDir}, {GitHubVolume, GitHubDir}} {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: v.name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		spec.VolumeMounts = append(spec.VolumeMounts, corev1.VolumeMount{Name: v.name, MountPath: v.path})
	}
	aliases := map[string]bool{"localhost": true}
	for i, svc := range sh.Services {
		if svc.Image == "" {
			return spec, fmt.Errorf("service %d has no image", i)
		}
		ks := kube.Service{Image: svc.Image, Env: ContainerEnv(), Args: svc.Args}
		if svc.EntryPoint != "" {
			ks.Command = []string{svc.EntryPoint}
		}
		maps.Copy(ks.Env, svc.Env)
		if alias := ServiceAlias(svc.Image); alias != "" && !aliases[alias] {
			aliases[alias] = true
			ks.Aliases = []string{alias}
		}
		spec.Services = append(spec.Services, ks)
	}
	if sh.Externals != nil {
		if err := sh.Externals.AddTo(&spec); err != nil {
			return spec, err
		}
	}
	return spec, nil
}

// AddTo adds the externals' emptyDir to spec, mounted read-only at
// ExternalsDir, and the init container that fills it from x.Image.
func (x Externals) AddTo(spec *kube.Spec) error {
	dir := x.Dir
	if dir == "" {
		dir = DefaultExternalsDir
	}
	if !strings.HasPrefix(dir, "/") {
		return fmt.Errorf("the externals directory %q is not an absolute path in the image %s", dir, x.Image)
	}
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: ExternalsVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	spec.VolumeMounts = append(spec.VolumeMounts, corev1.VolumeMount{Name: ExternalsVolume, MountPath: ExternalsDir, ReadOnly: true})
	spec.ImageCopies = append(spec.ImageCopies, kube.ImageCopy{Name: ExternalsCopy, Image: x.Image, Dir: dir, Volume: ExternalsVolume, Optional: x.Optional})
	return nil
}

// ServiceAlias is the host name a service is reached under besides
// localhost: its image's name without registry, path, tag or digest
// (redis:7 → redis), as the reference hook names its containers; "" when
// that is not a DNS label. The hook never learns the service's label in
// the workflow.
func ServiceAlias(image string) string {
	if i := strings.IndexByte(image, '@'); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndexByte(image, '/'); i >= 0 {
		image = image[i+1:]
	}
	if i := strings.IndexByte(image, ':'); i >= 0 {
		image = image[:i]
	}
	image = strings.ToLower(image)
	if len(validation.IsDNS1123Label(image)) > 0 {
		return ""
	}
	return image
}
