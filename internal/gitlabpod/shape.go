// Package gitlabpod is the shape `tether gitlab` gives every job pod
// beyond the pod settings it shares with `tether run`: a serving shim,
// the runner's command alias, the builds and cache volumes shared with
// the helper container, the helper container, the pull policy. The
// driver builds its job pods with it, and a pool for GitLab jobs (`for:
// gitlab` in the pools file) builds its warm pods with it, so both hash
// alike (kube.PoolHash) and a job of the driver can claim such a pod.
package gitlabpod

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/tether-ci/tether/client/kube"
)

// RunnerCommand is the command the runner's generated stage scripts call
// to extract and archive caches and to download and upload artifacts
// (`gitlab-runner cache-extractor …`): the Custom executor registers its
// runner command under this name.
const RunnerCommand = "gitlab-runner"

// RunnerHelperCommand is the runner's helper binary in GitLab's helper
// image, which has no RunnerCommand: the driver's shims offer it to the
// stage scripts as RunnerCommand.
const RunnerHelperCommand = "gitlab-runner-helper"

// Default directories of the builds and cache volumes (the driver's
// builds-dir and cache-dir).
const (
	DefaultBuildsDir = "/builds"
	DefaultCacheDir  = "/cache"
)

// Shape is what the driver adds to a job pod's spec.
type Shape struct {
	// BuildsDir and CacheDir get an emptyDir volume each (mounted in the
	// build and helper containers), unless the pod settings mount a
	// volume there already.
	BuildsDir, CacheDir string
	// Helper is the helper container that runs the stages needing git or
	// gitlab-runner-helper; nil for none.
	Helper *kube.Helper
	// PullPolicy is the pods' image pull policy ("" for Kubernetes').
	PullPolicy corev1.PullPolicy
}

// CommandAliases returns the shims' command aliases: RunnerCommand runs
// RunnerHelperCommand in containers that have only that.
func CommandAliases() []kube.CommandAlias {
	return []kube.CommandAlias{{Name: RunnerCommand, Target: RunnerHelperCommand}}
}

// Apply puts the shape onto spec: call it after the pod settings and the
// job's services are on spec (the volumes go after theirs).
func (sh Shape) Apply(spec *kube.Spec) {
	spec.Serve = true
	spec.CommandAliases = CommandAliases()
	spec.PullPolicy = sh.PullPolicy
	for _, dir := range []struct{ name, path string }{{"builds", sh.BuildsDir}, {"cache", sh.CacheDir}} {
		// A volume the admin mounts there (a cache PVC, say) wins.
		if slices.ContainsFunc(spec.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == dir.path }) {
			continue
		}
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "gitlab-" + dir.name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		spec.VolumeMounts = append(spec.VolumeMounts, corev1.VolumeMount{Name: "gitlab-" + dir.name, MountPath: dir.path})
	}
	if sh.Helper != nil {
		h := *sh.Helper
		spec.Helper = &h
	}
}
