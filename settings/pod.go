package settings

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/tether-ci/tether/client/kube"
)

// Pod are the settings every Tether job pod takes (Kubernetes only):
// resources, placement, pull secrets, service account, services, volumes,
// labels and annotations, a pod patch, the termination grace and how the
// build container gets tether-shim. Each field is the flag in its comment;
// the zero Pod changes nothing in a kube.Spec.
type Pod struct {
	Resources                      // the build container's: --cpu, --memory, --requests, --limits
	NodeSelector     StringList    // --node-selector K=V
	Tolerations      StringList    // --toleration KEY[=VALUE][:EFFECT]
	PullSecrets      StringList    // --pull-secret NAME
	ServiceAccount   string        // --service-account NAME
	Services         StringList    // --service IMAGE[=ALIAS[,ALIAS]]
	Volumes          StringList    // --volume KIND:…:PATH[:ro]
	Labels           StringList    // --label K=V
	Annotations      StringList    // --annotation K=V
	Config           string        // --config FILE: flag values (Complete, ApplyFile)
	PodPatch         string        // --pod-patch FILE
	PodPatchType     string        // --pod-patch-type strategic|json
	ServiceResources Resources     // --service-cpu, --service-memory, --service-requests, --service-limits
	ScheduleTimeout  time.Duration // --schedule-timeout (AddFlags' default: kube.DefaultScheduleTimeout)
	TerminationGrace Grace         // --termination-grace-period
	ShimFrom         string        // --shim-from init|image
	// NoDisruptionProtection: --no-disruption-protection (the pod gets no
	// PodDisruptionBudget and no do-not-evict annotations).
	NoDisruptionProtection bool
}

// NoDisruptionProtectionFlag is the flag (and config file key) that turns
// off the job pod's protection from voluntary disruption.
const NoDisruptionProtectionFlag = "no-disruption-protection"

// servicePrefix prefixes the service containers' resource flags.
const servicePrefix = "service-"

// AddFlags registers the pod settings and --config on fs, with their
// defaults and help texts.
func (p *Pod) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&p.Config, ConfigFlag, "", "read flag values from this YAML `FILE`: keys are long flag names, values strings, numbers, bools or lists (repeatable flags); flags on the command line win")
	p.Resources.AddFlags(fs, "", "the build container")
	fs.Var(&p.NodeSelector, "node-selector", "run on nodes with label `K=V` (repeatable) (Kubernetes)")
	fs.Var(&p.Tolerations, "toleration", "tolerate a node taint: `KEY[=VALUE][:EFFECT]` (no VALUE: any value; EFFECT NoSchedule, PreferNoSchedule or NoExecute, none: all) (repeatable) (Kubernetes)")
	fs.DurationVar(&p.ScheduleTimeout, "schedule-timeout", kube.DefaultScheduleTimeout, "give up when the pod stays unschedulable this long: no node matches its --node-selector, --toleration or resources (Kubernetes)")
	fs.Var(&p.PullSecrets, "pull-secret", "image pull Secret `NAME` (repeatable) (Kubernetes)")
	fs.StringVar(&p.ServiceAccount, "service-account", "", "run the pod as this service account (Kubernetes)")
	p.ServiceResources.AddFlags(fs, servicePrefix, "each service container")
	fs.Var(&p.Services, "service", "a service sidecar `IMAGE[=ALIAS[,ALIAS...]]` the scripts reach on localhost and under its aliases (repeatable) (Kubernetes)")
	fs.Var(&p.Volumes, "volume", "mount a volume in the build container: `pvc:CLAIM:PATH`, hostpath:HOSTPATH:PATH, emptydir:PATH, emptydir-memory:PATH, configmap:NAME:PATH or secret:NAME:PATH, each with an optional :ro (repeatable) (Kubernetes)")
	fs.Var(&p.Labels, "label", "pod label `K=V` (repeatable) (Kubernetes)")
	fs.Var(&p.Annotations, "annotation", "pod annotation `K=V` (repeatable) (Kubernetes)")
	fs.StringVar(&p.PodPatch, "pod-patch", "", "patch the pod last with this `FILE` (YAML or JSON): a strategic merge patch, or a JSON patch (RFC 6902) when it is a list; a patch that changes the shim's command, its stdin, Tether's volumes, labels or init container is refused (Kubernetes)")
	fs.Var(&p.TerminationGrace, "termination-grace-period", "how long the pod's containers get from SIGTERM to SIGKILL when the pod is deleted (a service that ignores SIGTERM keeps the pod terminating this long): whole seconds (30) or a duration (30s, 2m); the pod's terminationGracePeriodSeconds and the grace of tether's delete (default: Kubernetes', 30s) (Kubernetes)")
	fs.StringVar(&p.PodPatchType, "pod-patch-type", "", "`TYPE` of --pod-patch: strategic or json (default: json when the patch is a list, else strategic) (Kubernetes)")
	fs.BoolVar(&p.NoDisruptionProtection, NoDisruptionProtectionFlag, false, "let node drains and autoscalers evict the job's pod: by default it gets a PodDisruptionBudget of its own (a drain waits for the job) and the annotations "+kube.AnnotationSafeToEvict+"=false and "+kube.AnnotationDoNotDisrupt+"=true (Kubernetes)")
	fs.StringVar(&p.ShimFrom, "shim-from", string(kube.ShimFromInit), "how the build container gets tether-shim from --helper-image, `MODE` init (an init container copies it) or image (mounted as an image volume: no init container, the build container starts sooner; needs Kubernetes' ImageVolume feature, on by default from 1.35, and a runtime that supports it; where the API server drops image volumes, or the runtime cannot mount them, an init container is used) (Kubernetes)")
}

// IsSet reports whether a setting that shapes the pod is set (--config,
// --schedule-timeout and --shim-from init shape nothing): a command with a
// backend that makes no pod refuses them.
func (p *Pod) IsSet() bool {
	return p.Resources.IsSet() || p.ServiceResources.IsSet() || p.ServiceAccount != "" || p.NoDisruptionProtection ||
		p.PodPatch != "" || p.TerminationGrace != 0 || p.ShimFrom != "" && p.ShimFrom != string(kube.ShimFromInit) || len(p.NodeSelector)+len(p.Tolerations)+len(p.PullSecrets)+len(p.Services)+len(p.Volumes)+len(p.Labels)+len(p.Annotations) > 0
}

// Complete sets the flags of fs that the command line left unset from the
// config file p.Config names (nothing when it names none): see ApplyFile.
// fs is the whole command's FlagSet, so the file covers the command's own
// flags as well as the pod settings. Call it after fs.Parse.
func (p *Pod) Complete(fs *pflag.FlagSet) error {
	return ApplyFile(fs, p.Config)
}

// Validate checks every setting as ApplyTo does (reading the pod patch
// file) without a spec to fill: its errors are ApplyTo's.
func (p *Pod) Validate() error {
	return p.ApplyTo(&kube.Spec{})
}
