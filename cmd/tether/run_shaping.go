package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tether-ci/tether/client/kube"
)

// shapingFlags are the `tether run` flags that shape the job's pod
// (Kubernetes only): resources, placement, pull secrets, service account,
// services, volumes, labels and annotations.
type shapingFlags struct {
	resourceFlags                  // the build container's: --cpu, --memory, --requests, --limits
	NodeSelector     stringList    // --node-selector K=V
	Tolerations      stringList    // --toleration KEY[=VALUE][:EFFECT]
	PullSecrets      stringList    // --pull-secret NAME
	ServiceAccount   string        // --service-account NAME
	Services         stringList    // --service IMAGE[=ALIAS[,ALIAS]]
	Volumes          stringList    // --volume KIND:…:PATH[:ro]
	Labels           stringList    // --label K=V
	Annotations      stringList    // --annotation K=V
	Config           string        // --config FILE: flag values (configfile.go)
	PodPatch         string        // --pod-patch FILE
	PodPatchType     string        // --pod-patch-type strategic|json
	ServiceResources resourceFlags // --service-cpu, --service-memory, --service-requests, --service-limits
	ScheduleTimeout  time.Duration // --schedule-timeout
	TerminationGrace graceFlag     // --termination-grace-period
	ShimFrom         string        // --shim-from init|image
}

// registerShapingFlags adds the pod-shaping flags to fs.
func registerShapingFlags(fs *pflag.FlagSet, f *shapingFlags) {
	fs.StringVar(&f.Config, configFlag, "", "read flag values from this YAML `FILE`: keys are long flag names, values strings, numbers, bools or lists (repeatable flags); flags on the command line win")
	f.resourceFlags.register(fs, "the build container")
	fs.Var(&f.NodeSelector, "node-selector", "run on nodes with label `K=V` (repeatable) (Kubernetes)")
	fs.Var(&f.Tolerations, "toleration", "tolerate a node taint: `KEY[=VALUE][:EFFECT]` (no VALUE: any value; EFFECT NoSchedule, PreferNoSchedule or NoExecute, none: all) (repeatable) (Kubernetes)")
	fs.DurationVar(&f.ScheduleTimeout, "schedule-timeout", kube.DefaultScheduleTimeout, "give up when the pod stays unschedulable this long: no node matches its --node-selector, --toleration or resources (Kubernetes)")
	fs.Var(&f.PullSecrets, "pull-secret", "image pull Secret `NAME` (repeatable) (Kubernetes)")
	fs.StringVar(&f.ServiceAccount, "service-account", "", "run the pod as this service account (Kubernetes)")
	f.ServiceResources.prefix = "service-"
	f.ServiceResources.register(fs, "each service container")
	fs.Var(&f.Services, "service", "a service sidecar `IMAGE[=ALIAS[,ALIAS...]]` the scripts reach on localhost and under its aliases (repeatable) (Kubernetes)")
	fs.Var(&f.Volumes, "volume", "mount a volume in the build container: `pvc:CLAIM:PATH`, hostpath:HOSTPATH:PATH, emptydir:PATH, emptydir-memory:PATH, configmap:NAME:PATH or secret:NAME:PATH, each with an optional :ro (repeatable) (Kubernetes)")
	fs.Var(&f.Labels, "label", "pod label `K=V` (repeatable) (Kubernetes)")
	fs.Var(&f.Annotations, "annotation", "pod annotation `K=V` (repeatable) (Kubernetes)")
	fs.StringVar(&f.PodPatch, "pod-patch", "", "patch the pod last with this `FILE` (YAML or JSON): a strategic merge patch, or a JSON patch (RFC 6902) when it is a list; a patch that changes the shim's command, its stdin, Tether's volumes, labels or init container is refused (Kubernetes)")
	fs.Var(&f.TerminationGrace, "termination-grace-period", "how long the pod's containers get from SIGTERM to SIGKILL when the pod is deleted (a service that ignores SIGTERM keeps the pod terminating this long): whole seconds (30) or a duration (30s, 2m); the pod's terminationGracePeriodSeconds and the grace of tether's delete (default: Kubernetes', 30s) (Kubernetes)")
	fs.StringVar(&f.PodPatchType, "pod-patch-type", "", "`TYPE` of --pod-patch: strategic or json (default: json when the patch is a list, else strategic) (Kubernetes)")
	fs.StringVar(&f.ShimFrom, "shim-from", string(kube.ShimFromInit), "how the build container gets tether-shim from --helper-image, `MODE` init (an init container copies it) or image (mounted as an image volume: no init container, the build container starts sooner; needs Kubernetes' ImageVolume feature, on by default from 1.35, and a runtime that supports it; where the API server drops image volumes, or the runtime cannot mount them, an init container is used) (Kubernetes)")
}

// any reports whether a pod-shaping flag was given.
func (f *shapingFlags) any() bool {
	return f.resourceFlags.any() || f.ServiceResources.any() || f.ServiceAccount != "" ||
		f.PodPatch != "" || f.TerminationGrace != 0 || f.ShimFrom != "" && f.ShimFrom != string(kube.ShimFromInit) || len(f.NodeSelector)+len(f.Tolerations)+len(f.PullSecrets)+len(f.Services)+len(f.Volumes)+len(f.Labels)+len(f.Annotations) > 0
}

// apply parses the flags into spec. Every error names its flag.
func (f *shapingFlags) apply(spec *kube.Spec) error {
	if f.ScheduleTimeout < 0 {
		return fmt.Errorf("--schedule-timeout %s must not be negative (0 takes the default, %s)", f.ScheduleTimeout, kube.DefaultScheduleTimeout)
	}
	spec.TerminationGracePeriod = time.Duration(f.TerminationGrace)
	switch kube.ShimSource(f.ShimFrom) {
	case "", kube.ShimFromInit, kube.ShimFromImage:
		spec.ShimFrom = kube.ShimSource(f.ShimFrom)
	default:
		return fmt.Errorf("--shim-from %q: want %s or %s", f.ShimFrom, kube.ShimFromInit, kube.ShimFromImage)
	}
	var err error
	if spec.Resources, err = f.resources(); err != nil {
		return err
	}
	if spec.NodeSelector, err = keyValues("--node-selector", f.NodeSelector, kube.CheckLabel); err != nil {
		return err
	}
	if spec.Labels, err = keyValues("--label", f.Labels, kube.CheckLabel); err != nil {
		return err
	}
	if spec.Annotations, err = keyValues("--annotation", f.Annotations, checkAnnotation); err != nil {
		return err
	}
	for _, t := range f.Tolerations {
		tol, err := parseToleration(t)
		if err != nil {
			return err
		}
		spec.Tolerations = append(spec.Tolerations, tol)
	}
	for _, name := range f.PullSecrets {
		if err := checkObjectName("--pull-secret", name); err != nil {
			return err
		}
	}
	spec.ImagePullSecrets = append(spec.ImagePullSecrets, f.PullSecrets...)
	if f.ServiceAccount != "" {
		if err := checkObjectName("--service-account", f.ServiceAccount); err != nil {
			return err
		}
	}
	spec.ServiceAccountName = f.ServiceAccount
	svcResources, err := f.ServiceResources.parse()
	if err != nil {
		return err
	}
	for _, s := range f.Services {
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
	for i, v := range f.Volumes {
		vol, mount, err := parseVolume(i, v)
		if err != nil {
			return err
		}
		spec.Volumes = append(spec.Volumes, vol)
		spec.VolumeMounts = append(spec.VolumeMounts, mount)
	}
	return f.podPatch(spec)
}

// podPatch reads --pod-patch into spec.
func (f *shapingFlags) podPatch(spec *kube.Spec) error {
	typ := kube.PatchType(f.PodPatchType)
	switch typ {
	case kube.PatchDetect, kube.PatchStrategic, kube.PatchJSON:
	default:
		return fmt.Errorf("--pod-patch-type %q: want strategic or json", f.PodPatchType)
	}
	if f.PodPatch == "" {
		if typ != kube.PatchDetect {
			return errors.New("--pod-patch-type needs --pod-patch FILE")
		}
		return nil
	}
	data, err := os.ReadFile(f.PodPatch)
	if err != nil {
		return fmt.Errorf("--pod-patch: %w", err)
	}
	spec.PodPatch = &kube.PodPatch{Type: typ, Data: data}
	return nil
}

// resources returns the build container's requests and limits.
func (f *shapingFlags) resources() (corev1.ResourceRequirements, error) {
	return f.resourceFlags.parse()
}

// resourceFlags are one container's --PREFIXcpu, --PREFIXmemory (request =
// limit), --PREFIXrequests and --PREFIXlimits (cpu=…,memory=…, over the
// first two).
type resourceFlags struct {
	prefix                        string
	CPU, Memory, Requests, Limits string
}

// register adds the four flags, for what (e.g. "the build container").
func (r *resourceFlags) register(fs *pflag.FlagSet, what string) {
	fs.StringVar(&r.CPU, r.prefix+"cpu", "", "CPU of "+what+", as request and limit (e.g. 500m, 2) (Kubernetes)")
	fs.StringVar(&r.Memory, r.prefix+"memory", "", "memory of "+what+", as request and limit (e.g. 512Mi) (Kubernetes)")
	fs.StringVar(&r.Requests, r.prefix+"requests", "", "resource requests of "+what+", `cpu=...,memory=...` (over --"+r.prefix+"cpu/--"+r.prefix+"memory) (Kubernetes)")
	fs.StringVar(&r.Limits, r.prefix+"limits", "", "resource limits of "+what+", `cpu=...,memory=...` (over --"+r.prefix+"cpu/--"+r.prefix+"memory) (Kubernetes)")
}

// any reports whether one of the four flags was given.
func (rf resourceFlags) any() bool {
	return rf.CPU != "" || rf.Memory != "" || rf.Requests != "" || rf.Limits != ""
}

// parse returns the requests and limits; every error names its flag.
func (rf resourceFlags) parse() (corev1.ResourceRequirements, error) {
	var r corev1.ResourceRequirements
	flag := func(name string) string { return "--" + rf.prefix + name }
	both := func(flagName, value string, name corev1.ResourceName) error {
		if value == "" {
			return nil
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return fmt.Errorf("%s %q is not a quantity (e.g. 500m, 2, 512Mi): %w", flagName, value, err)
		}
		if r.Requests == nil {
			r.Requests, r.Limits = corev1.ResourceList{}, corev1.ResourceList{}
		}
		r.Requests[name], r.Limits[name] = q, q
		return nil
	}
	if err := both(flag("cpu"), rf.CPU, corev1.ResourceCPU); err != nil {
		return r, err
	}
	if err := both(flag("memory"), rf.Memory, corev1.ResourceMemory); err != nil {
		return r, err
	}
	for _, x := range []struct {
		flag, value string
		into        *corev1.ResourceList
	}{{flag("requests"), rf.Requests, &r.Requests}, {flag("limits"), rf.Limits, &r.Limits}} {
		if x.value == "" {
			continue
		}
		for _, kv := range strings.Split(x.value, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" || v == "" {
				return r, fmt.Errorf("%s %q: want NAME=QUANTITY[,NAME=QUANTITY…] (e.g. cpu=500m,memory=1Gi)", x.flag, x.value)
			}
			q, err := resource.ParseQuantity(v)
			if err != nil {
				return r, fmt.Errorf("%s: %s=%q is not a quantity: %w", x.flag, k, v, err)
			}
			if *x.into == nil {
				*x.into = corev1.ResourceList{}
			}
			(*x.into)[corev1.ResourceName(k)] = q
		}
	}
	for name, req := range r.Requests {
		if lim, ok := r.Limits[name]; ok && req.Cmp(lim) > 0 {
			return r, fmt.Errorf("the %s request %s is more than its limit %s (%s/%s, %s, %s)", name, req.String(), lim.String(),
				flag("cpu"), flag("memory"), flag("requests"), flag("limits"))
		}
	}
	return r, nil
}

// keyValues parses repeatable K=V flags, each checked by check.
func keyValues(flagName string, list []string, check func(k, v string) error) (map[string]string, error) {
	if len(list) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s %q: want KEY=VALUE", flagName, kv)
		}
		if err := check(k, v); err != nil {
			return nil, fmt.Errorf("%s %q: %w", flagName, kv, err)
		}
		m[k] = v
	}
	return m, nil
}

// checkAnnotation checks an annotation's key (any value is fine).
func checkAnnotation(k, _ string) error {
	if errs := validation.IsQualifiedName(strings.ToLower(k)); len(errs) > 0 {
		return fmt.Errorf("key %q: %s", k, strings.Join(errs, "; "))
	}
	return nil
}

// checkObjectName checks the name of a Kubernetes object a flag refers to
// (a Secret, a ServiceAccount, a PersistentVolumeClaim, a ConfigMap).
func checkObjectName(flagName, name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("%s %q is not a Kubernetes object name: %s", flagName, name, strings.Join(errs, "; "))
	}
	return nil
}

// parseToleration parses KEY[=VALUE][:EFFECT].
func parseToleration(s string) (corev1.Toleration, error) {
	var t corev1.Toleration
	kv, effect, hasEffect := strings.Cut(s, ":")
	key, value, hasValue := strings.Cut(kv, "=")
	if key == "" {
		return t, fmt.Errorf("--toleration %q: want KEY[=VALUE][:EFFECT]", s)
	}
	t.Key = key
	t.Operator = corev1.TolerationOpExists
	if hasValue {
		t.Operator, t.Value = corev1.TolerationOpEqual, value
	}
	if hasEffect {
		switch e := corev1.TaintEffect(effect); e {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
			t.Effect = e
		default:
			return t, fmt.Errorf("--toleration %q: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", s, effect)
		}
	}
	if err := kube.CheckToleration(t); err != nil {
		return t, fmt.Errorf("--toleration %q: %w", s, err)
	}
	return t, nil
}

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
