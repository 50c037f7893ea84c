package actions

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// userVolumePrefix starts the names of the pod volumes made for the
// containers' userMountVolumes.
const userVolumePrefix = "uv-"

var notLabelChars = regexp.MustCompile(`[^a-z0-9-]+`)

// userVolumes plans the userMountVolumes of the job container (index 0)
// and the services (index i+1): a named volume (a source that is not a
// path) is one emptyDir every container naming it mounts, so they share
// its files as docker's named volumes do; a mount without a source is an
// emptyDir of that container alone (docker's anonymous volume). A source
// that is an absolute runner-host path is refused: the runner's disk is
// not the node's.
func userVolumes(ctrs []*Container) ([]corev1.Volume, [][]corev1.VolumeMount, error) {
	var vols []corev1.Volume
	have := map[string]bool{}
	mounts := make([][]corev1.VolumeMount, len(ctrs))
	for i, c := range ctrs {
		if c == nil {
			continue
		}
		for j, m := range c.UserMountVolumes {
			what := containerWhat(i, c)
			if !strings.HasPrefix(m.TargetVolumePath, "/") {
				return nil, nil, fmt.Errorf("%s: volume %q: the target %q is not an absolute path", what, m.UserProvidedValue, m.TargetVolumePath)
			}
			if t := strings.TrimRight(m.TargetVolumePath, "/"); t == "" || t == "/tether" || strings.HasPrefix(t, "/tether/") {
				return nil, nil, fmt.Errorf("%s: volume %q: the target %s would cover / or /tether, where tether-shim lives", what, m.UserProvidedValue, m.TargetVolumePath)
			}
			var name string
			switch src := m.SourceVolumePath; {
			case strings.HasPrefix(src, "/"):
				return nil, nil, fmt.Errorf("%s: volume %q: %s is a path on the runner's host, which the job's pod cannot mount: "+
					"use a named volume (name:%s) to share files between the job's containers, or mount real storage (a PVC, hostPath) "+
					"with the hook template (%s) or %s's volume setting", what, m.UserProvidedValue, src, m.TargetVolumePath, EnvHookTemplate, EnvConfig)
			case src == "":
				name = fmt.Sprintf("%sanon-%d-%d", userVolumePrefix, i, j)
			default:
				name = namedVolume(src)
			}
			if !have[name] {
				have[name] = true
				vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			}
			mounts[i] = append(mounts[i], corev1.VolumeMount{Name: name, MountPath: m.TargetVolumePath, ReadOnly: m.ReadOnly})
		}
	}
	return vols, mounts, nil
}

// namedVolume is the pod volume of a docker named volume: a DNS label
// made of the name and a hash of it, so two names never share one.
func namedVolume(src string) string {
	sum := sha256.Sum256([]byte(src))
	base := strings.Trim(notLabelChars.ReplaceAllString(strings.ToLower(src), "-"), "-")
	if len(base) > 40 {
		base = strings.TrimRight(base[:40], "-")
	}
	if base != "" {
		base += "-"
	}
	return userVolumePrefix + base + hex.EncodeToString(sum[:])[:8]
}

// containerWhat names container i of userVolumes' list in errors.
func containerWhat(i int, c *Container) string {
	if i == 0 {
		return "the job container"
	}
	return fmt.Sprintf("service %d (%s)", i-1, c.Image)
}
