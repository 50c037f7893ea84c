package kube

import (
	"path"

	corev1 "k8s.io/api/core/v1"
)

// ShimSource is how a job pod's build container gets tether-shim from the
// helper image (Spec.ShimFrom).
type ShimSource string

const (
	// ShimFromInit copies the shim from the helper image into the pod's
	// /tether volume with an init container, which every cluster runs.
	// The kubelet notices that the init container has ended only at its
	// next look at the pod's containers (about a second later on a
	// kubelet that polls the runtime), so the build container starts that
	// much later.
	ShimFromInit ShimSource = "init"
	// ShimFromImage mounts the helper image as an image volume (the pod's
	// volumes[].image, Kubernetes' ImageVolume feature: beta and on by
	// default from Kubernetes 1.35, with a container runtime that supports
	// it, such as containerd 2.1 or CRI-O 1.31) where the build container
	// finds the shim: no init container, no copy. Where the API server
	// drops image volumes (the feature off, or a Kubernetes older than
	// 1.31), Create notices it before creating the pod and falls back to
	// ShimFromInit; where the API server keeps them but the container
	// runtime has none (containerd before 2.1, CRI-O before 1.31), WaitRunning notices the
	// runtime's failure to create the container and replaces the pod with
	// the ShimFromInit one.
	ShimFromImage ShimSource = "image"
)

// shimVolume is the name of the image volume that carries the shim
// (ShimFromImage); it is mounted where ShimPath is.
const shimVolume = "tether-shim"

// shimInitContainer is the init container that copies the shim from image
// into the pod's /tether volume (ShimFromInit).
func shimInitContainer(image string, pull corev1.PullPolicy, podSC *corev1.PodSecurityContext) corev1.Container {
	return corev1.Container{
		Name:            InitContainer,
		Image:           image,
		ImagePullPolicy: pull,
		Command:         []string{"/tether-shim", "copy", InitMountPath + "/bin/tether-shim"},
		VolumeMounts:    []corev1.VolumeMount{{Name: "tether", MountPath: InitMountPath}},
		SecurityContext: initSecurityContext(podSC),
	}
}

// shimImageVolume returns the image volume that carries the shim
// (ShimFromImage) and its mount: on ShimPath's directory, since the helper
// image has tether-shim at its root.
func shimImageVolume(image string, pull corev1.PullPolicy) (corev1.Volume, corev1.VolumeMount) {
	return corev1.Volume{Name: shimVolume, VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: image, PullPolicy: pull}}},
		corev1.VolumeMount{Name: shimVolume, MountPath: path.Dir(ShimPath), ReadOnly: true}
}

// shimImage returns the shim's image volume of pod, if it has one.
func shimImage(pod *corev1.Pod) (*corev1.ImageVolumeSource, bool) {
	for _, v := range pod.Spec.Volumes {
		if v.Name == shimVolume && v.Image != nil {
			return v.Image, true
		}
	}
	return nil, false
}
