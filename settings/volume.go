package settings

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// parseVolume parses KIND:…:PATH[:ro] into the i-th volume and its mount.
func parseVolume(i int, s string) (corev1.Volume, corev1.VolumeMount, error) {
	parts := strings.Split(s, ":")
	readOnly := false
	if len(parts) > 2 && parts[len(parts)-1] == "ro" {
		readOnly, parts = true, parts[:len(parts)-1]
	}
	name := fmt.Sprintf("vol-%d", i)
	vol := corev1.Volume{Name: name}
	bad := func(want string) (corev1.Volume, corev1.VolumeMount, error) {
		return vol, corev1.VolumeMount{}, fmt.Errorf("--volume %q: want %s", s, want)
	}
	var path string
	switch kind := parts[0]; kind {
	case "emptydir", "emptydir-memory":
		if len(parts) != 2 {
			return bad(kind + ":PATH[:ro]")
		}
		vol.EmptyDir = &corev1.EmptyDirVolumeSource{}
		if kind == "emptydir-memory" {
			vol.EmptyDir.Medium = corev1.StorageMediumMemory
		}
		path = parts[1]
	case "pvc", "hostpath", "configmap", "secret":
		if len(parts) != 3 || parts[1] == "" {
			return bad(kind + ":SOURCE:PATH[:ro]")
		}
		src := parts[1]
		if kind != "hostpath" {
			if err := checkObjectName("--volume "+s+": "+kind, src); err != nil {
				return vol, corev1.VolumeMount{}, err
			}
		}
		switch kind {
		case "pvc":
			vol.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: src, ReadOnly: readOnly}
		case "hostpath":
			if !strings.HasPrefix(src, "/") {
				return bad("hostpath:/ABSOLUTE/HOST/PATH:PATH[:ro]")
			}
			vol.HostPath = &corev1.HostPathVolumeSource{Path: src}
		case "configmap":
			vol.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: src}}
		case "secret":
			vol.Secret = &corev1.SecretVolumeSource{SecretName: src}
		}
		path = parts[2]
	default:
		return bad("a kind of pvc, hostpath, emptydir, emptydir-memory, configmap or secret")
	}
	if !strings.HasPrefix(path, "/") {
		return vol, corev1.VolumeMount{}, errors.New("--volume " + s + ": the mount path must be absolute")
	}
	return vol, corev1.VolumeMount{Name: name, MountPath: path, ReadOnly: readOnly}, nil
}
