package actions

import (
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/actions/internal/dockeropts"
)

// podShape is what prepare_job makes of the job pod beyond jobSpec: the
// containers' createOptions, their userMountVolumes and the hook
// template. Precedence, lowest first: the settings (EnvConfig, its
// pod-patch included), the workflow's options:, the hook template.
type podShape struct {
	// options are the job container's (index 0) and the services'
	// (index i+1) parsed createOptions.
	options []*dockeropts.Options
	// volumes are the user volumes; mounts their mounts by container,
	// indexed as options.
	volumes []corev1.Volume
	mounts  [][]corev1.VolumeMount
	// template is the hook template (nil without one).
	template *podTemplate
}

// planShape parses what shapes the job pod; warn receives the ignored
// flags and fields. An error names the container and what is wrong.
func planShape(args *PrepareJobArgs, templatePath string, warn func(string, ...any)) (*podShape, error) {
	ctrs := []*Container{args.Container}
	for i := range args.Services {
		ctrs = append(ctrs, &args.Services[i])
	}
	p := &podShape{}
	for i, c := range ctrs {
		o, err := dockeropts.Parse(c.CreateOptions)
		if err != nil {
			return nil, fmt.Errorf("%s: its options (%q): %w", containerWhat(i, c), c.CreateOptions, err)
		}
		for _, f := range o.Ignored {
			warn("%s: option %s has no meaning in a Kubernetes pod and is ignored", containerWhat(i, c), f)
		}
		if i == 0 && o.Entrypoint != "" {
			warn("the job container: option --entrypoint is ignored: tether-shim is the job container's entrypoint and runs every step")
		}
		if i > 0 && o.Hostname != "" {
			warn("%s: option --hostname is ignored: the containers of a pod share one host name (set it on the job container)", containerWhat(i, c))
		}
		if i == 0 && o.Hostname != "" {
			if errs := validation.IsDNS1123Label(o.Hostname); len(errs) > 0 {
				return nil, fmt.Errorf("the job container: option --hostname %q: %s", o.Hostname, strings.Join(errs, "; "))
			}
		}
		p.options = append(p.options, o)
	}
	var err error
	if p.volumes, p.mounts, err = userVolumes(ctrs); err != nil {
		return nil, err
	}
	if templatePath != "" {
		if p.template, err = readTemplate(templatePath); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// shapeSpec puts onto spec what kube.Spec carries: the job container's
// option variables and user volumes, the services' entrypoints,
// variables and health checks (a startup probe, so the job container
// starts once every service is healthy, as the runner's docker mode
// waits for a healthy service).
func (p *podShape) shapeSpec(spec *kube.Spec) error {
	for k, v := range p.options[0].Env {
		if strings.HasPrefix(k, kube.ShimEnvPrefix) {
			return fmt.Errorf("the job container's option --env %s: names starting with %s are reserved for tether-shim's settings", k, kube.ShimEnvPrefix)
		}
		spec.Env[k] = v
	}
	if p.options[0].HealthCmd != "" {
		return fmt.Errorf("the job container's option --health-cmd: a health check applies to services only (the runner waits for healthy services, never for the job container)")
	}
	spec.Volumes = append(spec.Volumes, p.volumes...)
	spec.VolumeMounts = append(spec.VolumeMounts, p.mounts[0]...)
	for i := range spec.Services {
		o, ks := p.options[i+1], &spec.Services[i]
		if o.Entrypoint != "" {
			ks.Command = []string{o.Entrypoint}
		}
		if ks.Env == nil {
			ks.Env = map[string]string{}
		}
		maps.Copy(ks.Env, o.Env)
		ks.StartupProbe = o.Probe()
	}
	return nil
}

// shapePod puts onto the built pod what kube.Spec does not carry (the
// containers' options, the services' mounts, the job container's host
// name), then the hook template, and checks the result keeps Tether's
// pod intact. names are the services' imageAlias names, in order.
func (p *podShape) shapePod(pod *corev1.Pod, names []string, warn func(string, ...any)) error {
	before := pod.DeepCopy()
	var services []*corev1.Container
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways && c.Name != kube.HelperContainer {
			services = append(services, c)
		}
	}
	if len(services) != len(p.options)-1 {
		return fmt.Errorf("the built pod has %d service containers, want %d", len(services), len(p.options)-1)
	}
	p.options[0].ApplyContainer(&pod.Spec.Containers[0])
	if p.options[0].Hostname != "" {
		pod.Spec.Hostname = p.options[0].Hostname
	}
	byName := map[string]string{}
	for i, c := range services {
		p.options[i+1].ApplyContainer(c)
		c.VolumeMounts = append(c.VolumeMounts, p.mounts[i+1]...)
		if i < len(names) && names[i] != "" {
			if _, dup := byName[names[i]]; !dup {
				byName[names[i]] = c.Name
			}
		}
	}
	if err := checkShaped(before, pod, "the workflow's options"); err != nil {
		return err
	}
	if p.template != nil {
		if err := p.template.apply(pod, byName, warn); err != nil {
			return fmt.Errorf("%s %s: %w", EnvHookTemplate, p.template.path, err)
		}
	}
	return nil
}

// shapeObjects shapes the built pod and its fallback (warnings once).
func shapeObjects(p *podShape, objs *kube.Objects, services []Container, warn func(string, ...any)) error {
	names := make([]string, len(services))
	for i, s := range services {
		names[i] = imageAlias(s.Image)
	}
	if err := p.shapePod(objs.Pod, names, warn); err != nil {
		return err
	}
	if objs.Fallback != nil {
		return p.shapePod(objs.Fallback, names, func(string, ...any) {})
	}
	return nil
}
