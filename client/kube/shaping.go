package kube

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Service is one sidecar container of the job's pod (a GitLab service).
type Service struct {
	// Name is the container's name; "" derives one from the image
	// ("svc-0-postgres"). Must be a DNS label and unique in the pod.
	Name string
	// Image is the service's image. Required.
	Image string
	// Aliases are host names the scripts reach the service under (besides
	// localhost): each becomes a host alias for 127.0.0.1, since every
	// container of a pod shares its network.
	Aliases []string
	// Command and Args override the image's entrypoint and command.
	Command, Args []string
	// Env are the service's variables (for example POSTGRES_PASSWORD).
	Env map[string]string
	// Resources are the service's requests and limits.
	Resources corev1.ResourceRequirements
	// PullPolicy, when set, is the service's instead of Spec.PullPolicy.
	PullPolicy corev1.PullPolicy
	// StartupProbe, when set, is the service's startup probe: the kubelet
	// starts the next sidecar and the build container only once it has
	// succeeded, so the scripts start with a healthy service (a database
	// that accepts connections, not one still initializing).
	StartupProbe *corev1.Probe
}

// Helper is the second shim container of a pod (Spec.Helper).
type Helper struct {
	// Image is the helper container's image; tether-shim is copied into
	// it like into the build container, so any Linux image works.
	// Required.
	Image string
	// Resources are the helper container's requests and limits.
	Resources corev1.ResourceRequirements
}

// PullSecretSuffix ends the name of a pod's own pull Secret
// (Spec.OwnPullSecret): the pod's name plus this.
const PullSecretSuffix = "-pull"

// reservedVolumes are the volume names Tether's pod layout uses.
var reservedVolumes = []string{"tether", "scripts", "files", "podinfo", "tmp"}

// validateShaping checks the pod-shaping fields and fills in service names.
func (s *Spec) validateShaping() error {
	for _, v := range s.Volumes {
		if slices.Contains(reservedVolumes, v.Name) {
			return fmt.Errorf("kube: volume %q: the name is one of Tether's own volumes (%s)", v.Name, strings.Join(reservedVolumes, ", "))
		}
		if errs := validation.IsDNS1123Label(v.Name); len(errs) > 0 {
			return fmt.Errorf("kube: volume name %q: %s", v.Name, strings.Join(errs, "; "))
		}
	}
	for _, m := range s.VolumeMounts {
		if !slices.ContainsFunc(s.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name }) {
			return fmt.Errorf("kube: volume mount %q at %s names no volume in Spec.Volumes", m.Name, m.MountPath)
		}
		if !strings.HasPrefix(m.MountPath, "/") {
			return fmt.Errorf("kube: volume mount %q: mount path %q is not absolute", m.Name, m.MountPath)
		}
		if p := strings.TrimRight(m.MountPath, "/"); p == "" || p == "/tether" || strings.HasPrefix(p, "/tether/") || strings.HasPrefix("/tether", p+"/") {
			return fmt.Errorf("kube: volume mount %q at %s would cover /tether, where the shim, its spool and the scripts live", m.Name, m.MountPath)
		}
	}
	if err := s.validatePlacement(); err != nil {
		return err
	}
	for _, name := range s.ImagePullSecrets {
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return fmt.Errorf("kube: image pull secret %q: %s", name, strings.Join(errs, "; "))
		}
	}
	used := map[string]bool{BuildContainer: true, InitContainer: true}
	if s.Helper != nil {
		if s.Helper.Image == "" {
			return errors.New("kube: Spec.Helper has no image")
		}
		used[HelperContainer] = true
	}
	for i := range s.Services {
		svc := &s.Services[i]
		if svc.Image == "" {
			return fmt.Errorf("kube: service %d has no image", i)
		}
		if svc.Name == "" {
			svc.Name = serviceName(i, svc.Image)
		}
		if errs := validation.IsDNS1123Label(svc.Name); len(errs) > 0 {
			return fmt.Errorf("kube: service name %q: %s", svc.Name, strings.Join(errs, "; "))
		}
		if used[svc.Name] {
			return fmt.Errorf("kube: service name %q is used twice (or is the build, helper or init container's)", svc.Name)
		}
		used[svc.Name] = true
		for _, a := range svc.Aliases {
			if errs := validation.IsDNS1123Subdomain(a); len(errs) > 0 {
				return fmt.Errorf("kube: service %s alias %q: %s", svc.Name, a, strings.Join(errs, "; "))
			}
		}
		for k := range svc.Env {
			if errs := validation.IsEnvVarName(k); len(errs) > 0 {
				return fmt.Errorf("kube: service %s variable %q: %s", svc.Name, k, strings.Join(errs, "; "))
			}
		}
	}
	return nil
}

// validatePlacement checks the service account, node selector, labels,
// annotations and tolerations, so a bad one fails Build rather than the
// pod's creation.
func (s *Spec) validatePlacement() error {
	if s.ServiceAccountName != "" {
		if errs := validation.IsDNS1123Subdomain(s.ServiceAccountName); len(errs) > 0 {
			return fmt.Errorf("kube: Spec.ServiceAccountName %q: %s", s.ServiceAccountName, strings.Join(errs, "; "))
		}
	}
	for field, m := range map[string]map[string]string{"Spec.NodeSelector": s.NodeSelector, "Spec.Labels": s.Labels} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if err := CheckLabel(k, m[k]); err != nil {
				return fmt.Errorf("kube: %s: %w", field, err)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Annotations)) {
		if errs := validation.IsQualifiedName(strings.ToLower(k)); len(errs) > 0 {
			return fmt.Errorf("kube: Spec.Annotations: key %q: %s", k, strings.Join(errs, "; "))
		}
	}
	for i, t := range s.Tolerations {
		if err := CheckToleration(t); err != nil {
			return fmt.Errorf("kube: Spec.Tolerations[%d]: %w", i, err)
		}
	}
	return nil
}

// CheckLabel reports whether k=v is a valid Kubernetes label (or node
// selector term): k a qualified name (an optional DNS subdomain prefix and
// "/", then up to 63 characters), v up to 63 characters of [-_.a-zA-Z0-9]
// starting and ending alphanumeric, or empty.
func CheckLabel(k, v string) error {
	if errs := validation.IsQualifiedName(k); len(errs) > 0 {
		return fmt.Errorf("key %q: %s", k, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
		return fmt.Errorf("value %q of %s: %s", v, k, strings.Join(errs, "; "))
	}
	return nil
}

// CheckToleration reports whether t is a toleration the API server
// accepts: a qualified-name key (empty only with operator Exists, which
// then tolerates every taint), operator Exists (no value) or Equal (a
// label value), and an effect of NoSchedule, PreferNoSchedule, NoExecute
// or none (all).
func CheckToleration(t corev1.Toleration) error {
	if t.Key != "" {
		if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
			return fmt.Errorf("key %q: %s", t.Key, strings.Join(errs, "; "))
		}
	}
	switch t.Operator {
	case corev1.TolerationOpExists:
		if t.Value != "" {
			return fmt.Errorf("key %q: operator Exists takes no value (%q)", t.Key, t.Value)
		}
	case corev1.TolerationOpEqual, "":
		if t.Key == "" {
			return errors.New("an empty key needs operator Exists")
		}
		if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
			return fmt.Errorf("key %q: value %q: %s", t.Key, t.Value, strings.Join(errs, "; "))
		}
	default:
		return fmt.Errorf("key %q: operator %q is not Exists or Equal", t.Key, t.Operator)
	}
	switch t.Effect {
	case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		return fmt.Errorf("key %q: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", t.Key, t.Effect)
	}
	return nil
}

// ServicePrefix starts the name of each service container whose
// Service.Name is "" (serviceName).
const ServicePrefix = "svc-"

// serviceName derives a container name from a service's image:
// "registry/library/postgres:16" → "svc-0-postgres".
func serviceName(i int, image string) string {
	base := image
	if j := strings.LastIndex(base, "/"); j >= 0 {
		base = base[j+1:]
	}
	base, _, _ = strings.Cut(base, "@")
	base, _, _ = strings.Cut(base, ":")
	base = strings.Trim(nameChars.ReplaceAllString(strings.ToLower(base), "-"), "-.")
	base = strings.ReplaceAll(base, ".", "-")
	name := fmt.Sprintf("%s%d-%s", ServicePrefix, i, base)
	if len(name) > validation.DNS1123LabelMaxLength {
		name = strings.TrimRight(name[:validation.DNS1123LabelMaxLength], "-")
	}
	return name
}

// applyShaping puts the pod-shaping fields of s onto pod.
func applyShaping(s Spec, pod *corev1.Pod) {
	ps := &pod.Spec
	build := &ps.Containers[0]
	build.Resources = *s.Resources.DeepCopy()
	if init := container(ps.InitContainers, InitContainer); init != nil {
		init.Resources = *s.InitResources.DeepCopy()
		if len(init.Resources.Requests)+len(init.Resources.Limits) == 0 {
			init.Resources = *s.Resources.DeepCopy()
		}
	}
	ps.Tolerations = slices.Clone(s.Tolerations)
	if s.Affinity != nil {
		ps.Affinity = s.Affinity.DeepCopy()
	}
	for _, name := range s.ImagePullSecrets {
		ps.ImagePullSecrets = append(ps.ImagePullSecrets, corev1.LocalObjectReference{Name: name})
	}
	if s.OwnPullSecret {
		ps.ImagePullSecrets = append(ps.ImagePullSecrets, corev1.LocalObjectReference{Name: s.Name + PullSecretSuffix})
	}
	for _, v := range s.Volumes {
		ps.Volumes = append(ps.Volumes, *v.DeepCopy())
	}
	build.VolumeMounts = append(build.VolumeMounts, s.VolumeMounts...)
	ps.PriorityClassName = s.PriorityClassName
	if s.RuntimeClassName != "" {
		rc := s.RuntimeClassName
		ps.RuntimeClassName = &rc
	}
	ps.DNSPolicy = s.DNSPolicy
	if s.DNSConfig != nil {
		ps.DNSConfig = s.DNSConfig.DeepCopy()
	}
	ps.HostAliases = slices.Clone(s.HostAliases)
	var aliases []string
	always := corev1.ContainerRestartPolicyAlways
	for _, svc := range s.Services {
		c := corev1.Container{
			Name:            svc.Name,
			Image:           svc.Image,
			ImagePullPolicy: cmp.Or(svc.PullPolicy, s.PullPolicy),
			Command:         slices.Clone(svc.Command),
			Args:            slices.Clone(svc.Args),
			Resources:       *svc.Resources.DeepCopy(),
			RestartPolicy:   &always,
		}
		if svc.StartupProbe != nil {
			c.StartupProbe = svc.StartupProbe.DeepCopy()
		}
		for _, k := range slices.Sorted(maps.Keys(svc.Env)) {
			c.Env = append(c.Env, corev1.EnvVar{Name: k, Value: svc.Env[k]})
		}
		// Native sidecars start after the init container that copies the
		// shim (if there is one), in order, before the build container.
		ps.InitContainers = append(ps.InitContainers, c)
		aliases = append(aliases, svc.Aliases...)
	}
	if len(aliases) > 0 {
		ps.HostAliases = append(ps.HostAliases, corev1.HostAlias{IP: "127.0.0.1", Hostnames: aliases})
	}
}
