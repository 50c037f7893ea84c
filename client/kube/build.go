package kube

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tether-ci/tether/client"
)

// Objects are what one job creates: the pod, and the ConfigMap and Secret
// it owns. Job is the job to send to the shim, with the scripts' paths as
// the pod sees them.
type Objects struct {
	Pod *corev1.Pod
	// Fallback is the pod Create makes instead of Pod when the API server
	// drops Pod's image volume (Spec.ShimFrom ShimFromImage on a cluster
	// without image volumes): the same pod with the shim's init container.
	// Nil for other pods.
	Fallback *corev1.Pod
	// ConfigMap holds the scripts; nil for a Spec.Serve pod.
	ConfigMap *corev1.ConfigMap
	// Secret is nil when the job has no variables.
	Secret *corev1.Secret
	Job    client.Job
	// Protect makes Create give the pod a PodDisruptionBudget (Protect);
	// false with Spec.NoDisruptionProtection.
	Protect bool
}

// Build returns the objects for spec without creating anything. It fails
// when the spec is incomplete, a variable name is invalid, or the scripts
// or variables exceed what a ConfigMap or Secret holds.
func Build(spec Spec) (*Objects, error) {
	s, err := spec.withDefaults()
	if err != nil {
		return nil, err
	}
	labels := map[string]string{LabelManagedBy: ManagedByValue, LabelJob: s.JobID}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: s.Namespace, Labels: maps.Clone(labels)}
	}

	objs := &Objects{Job: client.Job{ID: s.JobID}, Protect: !s.NoDisruptionProtection}

	cm := &corev1.ConfigMap{ObjectMeta: meta(s.Name + "-scripts"), Data: map[string]string{}}
	var total int
	add := func(i int, sc Script) string {
		key := scriptKey(i, sc.Name)
		if utf8.Valid(sc.Content) {
			cm.Data[key] = string(sc.Content)
		} else {
			if cm.BinaryData == nil {
				cm.BinaryData = map[string][]byte{}
			}
			cm.BinaryData[key] = sc.Content
		}
		total += len(sc.Content)
		return ScriptsDir + "/" + key
	}
	for i, sc := range s.Scripts {
		objs.Job.Scripts = append(objs.Job.Scripts, add(i, sc))
	}
	for i, sc := range s.After {
		objs.Job.After = append(objs.Job.After, add(len(s.Scripts)+i, sc))
	}
	if total > MaxObjectData {
		return nil, fmt.Errorf("kube: the scripts total %d bytes, more than the %d bytes a ConfigMap holds: "+
			"make them smaller (e.g. move large content into the image or fetch it in the script)", total, MaxObjectData)
	}
	if !s.Serve {
		objs.ConfigMap = cm
	}

	if len(s.Env) > 0 {
		sec := &corev1.Secret{ObjectMeta: meta(s.Name + "-env"), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{}}
		total = 0
		for k, v := range s.Env {
			sec.Data[k] = []byte(v)
			total += len(v)
		}
		if total > MaxObjectData {
			return nil, fmt.Errorf("kube: the variables total %d bytes, more than the %d bytes a Secret holds", total, MaxObjectData)
		}
		objs.Secret = sec
	}

	if objs.Pod, err = patchedPod(s, meta(s.Name), objs); err != nil {
		return nil, err
	}
	if s.ShimFrom == ShimFromImage {
		init := s
		init.ShimFrom = ShimFromInit
		if objs.Fallback, err = patchedPod(init, meta(s.Name), objs); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// patchedPod is buildPod with Spec.PodPatch applied.
func patchedPod(s Spec, meta metav1.ObjectMeta, objs *Objects) (*corev1.Pod, error) {
	pod := buildPod(s, meta, objs)
	if s.PodPatch == nil {
		return pod, nil
	}
	return applyPodPatch(pod, s.PodPatch)
}

// buildPod returns the pod of docs/ARCHITECTURE.md's layout, with the
// security contexts of security.go.
func buildPod(s Spec, meta metav1.ObjectMeta, objs *Objects) *corev1.Pod {
	for k, v := range s.Labels {
		if _, own := meta.Labels[k]; !own {
			meta.Labels[k] = v
		}
	}
	meta.Annotations = maps.Clone(s.Annotations)
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[AnnotationTTL] = strconv.FormatInt(seconds(s.TTL), 10)
	meta.Annotations[AnnotationDefaultContainer] = BuildContainer
	if !s.NoDisruptionProtection {
		maps.Copy(meta.Annotations, ProtectionAnnotations())
	}

	args := []string{
		"--spool-dir=" + SpoolDir,
		"--ttl-file=" + PodInfoDir + "/annotations",
		"--files-dir=" + FilesDir,
	}
	if s.Timeout > 0 {
		args = append(args, "--deadline="+strconv.FormatInt(seconds(s.Timeout), 10))
	}
	if s.IdleTimeout > 0 {
		args = append(args, "--idle-timeout="+s.IdleTimeout.String())
	}
	args = append(args, activityArgs(s)...)
	switch {
	case s.AfterTimeout > 0:
		args = append(args, "--after-timeout="+s.AfterTimeout.String())
	case s.AfterTimeout < 0:
		args = append(args, "--after-timeout=0s")
	}
	if s.TTY {
		args = append(args, "--tty")
	}
	if len(s.MaskEnv) > 0 {
		args = append(args, "--mask-env="+strings.Join(s.MaskEnv, ","))
	}
	for _, a := range s.CommandAliases {
		args = append(args, "--command-alias="+a.Name+"="+a.Target)
	}
	args = append(args, s.ShimArgs...)

	scriptMode := int32(0o755)
	volumes := []corev1.Volume{
		{Name: "tether", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "files", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		{Name: "podinfo", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			Items: []corev1.DownwardAPIVolumeFile{{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations"}}},
		}}},
	}
	build := corev1.Container{
		Name:            BuildContainer,
		Image:           s.Image,
		ImagePullPolicy: cmp.Or(s.ImagePullPolicy, s.PullPolicy),
		Command:         []string{ShimPath},
		Args:            args,
		Stdin:           true,
		StdinOnce:       false,
		TTY:             false,
		VolumeMounts: []corev1.VolumeMount{
			{Name: "tether", MountPath: "/tether"},
			{Name: "files", MountPath: FilesDir},
			{Name: "podinfo", MountPath: PodInfoDir, ReadOnly: true},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          s.SecurityContext,
	}
	if objs.ConfigMap != nil {
		volumes = append(volumes, corev1.Volume{Name: "scripts", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: objs.ConfigMap.Name},
			DefaultMode:          &scriptMode,
		}}})
		build.VolumeMounts = append(build.VolumeMounts, corev1.VolumeMount{Name: "scripts", MountPath: ScriptsDir, ReadOnly: true})
	}
	if readOnlyRoot(s.SecurityContext) {
		volumes = append(volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		build.VolumeMounts = append(build.VolumeMounts, corev1.VolumeMount{Name: "tmp", MountPath: TmpDir})
	}
	if objs.Secret != nil {
		build.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: objs.Secret.Name}}}}
	}
	var inits []corev1.Container
	if s.ShimFrom == ShimFromImage {
		vol, mount := shimImageVolume(s.HelperImage, s.PullPolicy)
		volumes = append(volumes, vol)
		build.VolumeMounts = append(build.VolumeMounts, mount)
	} else {
		inits = []corev1.Container{shimInitContainer(s.HelperImage, s.PullPolicy, s.PodSecurityContext)}
	}
	for _, c := range s.ImageCopies {
		inits = append(inits, imageCopyContainer(c, s.PullPolicy, s.PodSecurityContext))
	}
	pod := &corev1.Pod{
		ObjectMeta: meta,
		Spec: corev1.PodSpec{
			RestartPolicy:      corev1.RestartPolicyNever,
			ServiceAccountName: s.ServiceAccountName,
			NodeSelector:       maps.Clone(s.NodeSelector),
			SecurityContext:    s.PodSecurityContext,
			InitContainers:     inits,
			Containers:         []corev1.Container{build},
			Volumes:            volumes,
		},
	}
	if s.Helper != nil {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, helperContainer(s, build))
	}
	if s.Timeout > 0 {
		ads := seconds(s.Timeout + s.DeadlineMargin)
		pod.Spec.ActiveDeadlineSeconds = &ads
	}
	if s.TerminationGracePeriod > 0 {
		g := seconds(s.TerminationGracePeriod)
		pod.Spec.TerminationGracePeriodSeconds = &g
	}
	applyShaping(s, pod)
	return pod
}

// helperContainer returns Spec.Helper's container: the build container's
// shim, arguments (its own spool) and mounts, without the job's variables,
// as a native sidecar.
func helperContainer(s Spec, build corev1.Container) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	args := slices.Clone(build.Args)
	for i, a := range args {
		if strings.HasPrefix(a, "--spool-dir=") {
			args[i] = "--spool-dir=" + HelperSpoolDir
		}
	}
	var mounts []corev1.VolumeMount
	for _, m := range build.VolumeMounts {
		if m.Name != "scripts" {
			mounts = append(mounts, m)
		}
	}
	return corev1.Container{
		Name:                     HelperContainer,
		Image:                    s.Helper.Image,
		ImagePullPolicy:          s.PullPolicy,
		Command:                  []string{ShimPath},
		Args:                     args,
		Stdin:                    true,
		VolumeMounts:             append(mounts, s.VolumeMounts...),
		Resources:                *s.Helper.Resources.DeepCopy(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          s.SecurityContext.DeepCopy(),
		RestartPolicy:            &always,
	}
}

// PodOwner is the ownerReference to the pod named podName with UID uid:
// an object carrying it is garbage-collected with the pod.
func PodOwner(podName string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: podName, UID: uid}
}

// ownedBy sets an ownerReference to the pod on meta.
func ownedBy(meta *metav1.ObjectMeta, podName string, uid types.UID) {
	meta.OwnerReferences = []metav1.OwnerReference{PodOwner(podName, uid)}
}
