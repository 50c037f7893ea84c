package settings

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tether-ci/tether/client/kube"
)

// ApplyTo validates the settings and sets them in spec: resources, node
// selector, labels, annotations, tolerations, pull secrets (appended),
// service account, services (appended, each with the service resources),
// volumes and their build-container mounts (appended), the pod patch
// (read from its file), the termination grace, the shim's source and the
// protection from voluntary disruption. The
// first error is returned, naming its flag; spec may then be half set.
func (p *Pod) ApplyTo(spec *kube.Spec) error {
	if p.ScheduleTimeout < 0 {
		return fmt.Errorf("--schedule-timeout %s must not be negative (0 takes the default, %s)", p.ScheduleTimeout, kube.DefaultScheduleTimeout)
	}
	if g := time.Duration(p.TerminationGrace); g != 0 {
		if err := checkGrace(g); err != nil { // a Grace filled in Go: Set checked the flag's
			return fmt.Errorf("--termination-grace-period %s: %w", g, err)
		}
	}
	spec.TerminationGracePeriod = time.Duration(p.TerminationGrace)
	spec.NoDisruptionProtection = p.NoDisruptionProtection
	switch kube.ShimSource(p.ShimFrom) {
	case "", kube.ShimFromInit, kube.ShimFromImage:
		spec.ShimFrom = kube.ShimSource(p.ShimFrom)
	default:
		return fmt.Errorf("--shim-from %q: want %s or %s", p.ShimFrom, kube.ShimFromInit, kube.ShimFromImage)
	}
	var err error
	if spec.Resources, err = p.Resources.requirements(""); err != nil {
		return err
	}
	if spec.NodeSelector, err = keyValues("--node-selector", p.NodeSelector, kube.CheckLabel); err != nil {
		return err
	}
	if spec.Labels, err = keyValues("--label", p.Labels, kube.CheckLabel); err != nil {
		return err
	}
	if spec.Annotations, err = keyValues("--annotation", p.Annotations, checkAnnotation); err != nil {
		return err
	}
	for _, t := range p.Tolerations {
		tol, err := parseToleration(t)
		if err != nil {
			return err
		}
		spec.Tolerations = append(spec.Tolerations, tol)
	}
	for _, name := range p.PullSecrets {
		if err := checkObjectName("--pull-secret", name); err != nil {
			return err
		}
	}
	spec.ImagePullSecrets = append(spec.ImagePullSecrets, p.PullSecrets...)
	if p.ServiceAccount != "" {
		if err := checkObjectName("--service-account", p.ServiceAccount); err != nil {
			return err
		}
	}
	spec.ServiceAccountName = p.ServiceAccount
	if err := p.applyServices(spec); err != nil {
		return err
	}
	for i, v := range p.Volumes {
		vol, mount, err := parseVolume(i, v)
		if err != nil {
			return err
		}
		spec.Volumes = append(spec.Volumes, vol)
		spec.VolumeMounts = append(spec.VolumeMounts, mount)
	}
	return p.applyPodPatch(spec)
}

// applyServices appends the --service sidecars to spec, each with the
// service resources.
func (p *Pod) applyServices(spec *kube.Spec) error {
	svcResources, err := p.ServiceRequirements()
	if err != nil {
		return err
	}
	for _, s := range p.Services {
		image, aliases, _ := strings.Cut(s, "=")
		if image == "" {
			return fmt.Errorf("--service %q: want IMAGE[=ALIAS[,ALIAS…]]", s)
		}
		svc := kube.Service{Image: image, Resources: *svcResources.DeepCopy()}
		if aliases != "" {
			svc.Aliases = strings.Split(aliases, ",")
		}
		for _, a := range svc.Aliases {
			if errs := validation.IsDNS1123Subdomain(a); len(errs) > 0 {
				return fmt.Errorf("--service %q: alias %q is not a host name: %s", s, a, strings.Join(errs, "; "))
			}
		}
		spec.Services = append(spec.Services, svc)
	}
	return nil
}

// ServiceRequirements returns the service containers' requests and limits
// (--service-cpu, --service-memory, --service-requests, --service-limits),
// for services an integration adds to the spec itself; errors name those
// flags.
func (p *Pod) ServiceRequirements() (corev1.ResourceRequirements, error) {
	return p.ServiceResources.requirements(servicePrefix)
}
