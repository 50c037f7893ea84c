package kube

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"
)

// PatchType says how a PodPatch is applied.
type PatchType string

// The pod patch types.
const (
	// PatchDetect applies a patch whose top level is a list as a JSON
	// patch and any other patch as a strategic merge patch.
	PatchDetect PatchType = ""
	// PatchStrategic is a strategic merge patch (as kubectl patch
	// --type strategic): containers merge by name, maps merge.
	PatchStrategic PatchType = "strategic"
	// PatchJSON is an RFC 6902 JSON patch: a list of operations.
	PatchJSON PatchType = "json"
)

// PodPatch is a patch applied to the built pod last, after every other
// Spec field. Tether's invariants are checked after it: a patch that
// changes the build container's command or args, its stdin, Tether's
// volumes or mounts, the init container, the restart policy, the pod's
// name or namespace, Tether's labels or its TTL annotation is an error.
type PodPatch struct {
	// Type is how Data is applied; PatchDetect decides from Data.
	Type PatchType
	// Data is the patch, YAML or JSON.
	Data []byte
}

// applyPodPatch returns pod with p applied, or an error naming the first
// Tether invariant the patch breaks.
func applyPodPatch(pod *corev1.Pod, p *PodPatch) (*corev1.Pod, error) {
	patch, err := yaml.YAMLToJSON(p.Data)
	if err != nil {
		return nil, fmt.Errorf("kube: pod patch is neither YAML nor JSON: %w", err)
	}
	typ := p.Type
	if typ == PatchDetect {
		typ = PatchStrategic
		if trimmed := bytes.TrimSpace(patch); len(trimmed) > 0 && trimmed[0] == '[' {
			typ = PatchJSON
		}
	}
	orig, err := json.Marshal(pod)
	if err != nil {
		return nil, fmt.Errorf("kube: encode the pod for patching: %w", err)
	}
	var out []byte
	switch typ {
	case PatchStrategic:
		out, err = strategicMerge(orig, patch, reflect.TypeFor[corev1.Pod]())
		if err != nil {
			return nil, fmt.Errorf("kube: apply the strategic merge pod patch: %w", err)
		}
	case PatchJSON:
		ops, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, fmt.Errorf("kube: pod patch is not a JSON patch (a list of RFC 6902 operations): %w", err)
		}
		if out, err = ops.Apply(orig); err != nil {
			return nil, fmt.Errorf("kube: apply the JSON pod patch: %w", err)
		}
	default:
		return nil, fmt.Errorf("kube: unknown pod patch type %q: want strategic or json", p.Type)
	}
	patched := &corev1.Pod{}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(patched); err != nil {
		return nil, fmt.Errorf("kube: the patched pod is not a valid pod: %w", err)
	}
	if err := checkInvariants(pod, patched); err != nil {
		return nil, fmt.Errorf("kube: pod patch changes %w", err)
	}
	return patched, nil
}

// CheckInvariants returns an error naming the field of after, a pod
// Build made (before) and the caller then changed, that breaks one of
// Tether's invariants: the ones a PodPatch must keep.
func CheckInvariants(before, after *corev1.Pod) error { return checkInvariants(before, after) }

// checkInvariants returns an error naming the field of after that breaks
// one of Tether's invariants of before.
func checkInvariants(before, after *corev1.Pod) error {
	if after.Name != before.Name || after.Namespace != before.Namespace {
		return fmt.Errorf("metadata.name or metadata.namespace: Tether names the pod")
	}
	for _, k := range []string{LabelManagedBy, LabelJob} {
		if after.Labels[k] != before.Labels[k] {
			return fmt.Errorf("metadata.labels[%s]: Tether's labels must stay", k)
		}
	}
	for _, k := range []string{AnnotationTTL, AnnotationDefaultContainer} {
		if after.Annotations[k] != before.Annotations[k] {
			return fmt.Errorf("metadata.annotations[%s]: Tether's annotations must stay", k)
		}
	}
	if after.Spec.RestartPolicy != before.Spec.RestartPolicy {
		return fmt.Errorf("spec.restartPolicy: the pod must not restart the shim")
	}
	b := container(before.Spec.Containers, BuildContainer)
	a := container(after.Spec.Containers, BuildContainer)
	field := "spec.containers[" + BuildContainer + "]"
	switch {
	case a == nil:
		return fmt.Errorf("%s: the build container must stay", field)
	case !slices.Equal(a.Command, b.Command):
		return fmt.Errorf("%s.command: the build container must run tether-shim", field)
	case !slices.Equal(a.Args, b.Args):
		return fmt.Errorf("%s.args: tether-shim's arguments must stay", field)
	case !a.Stdin || a.StdinOnce:
		return fmt.Errorf("%s.stdin/stdinOnce: the shim's stdin must stay open (stdin: true, stdinOnce: false)", field)
	}
	for _, m := range b.VolumeMounts {
		if !slices.ContainsFunc(a.VolumeMounts, func(x corev1.VolumeMount) bool { return apiequality.Semantic.DeepEqual(x, m) }) {
			return fmt.Errorf("%s.volumeMounts[%s]: Tether's mounts must stay", field, m.Name)
		}
	}
	for _, v := range before.Spec.Volumes {
		i := slices.IndexFunc(after.Spec.Volumes, func(x corev1.Volume) bool { return x.Name == v.Name })
		if i < 0 || !apiequality.Semantic.DeepEqual(after.Spec.Volumes[i], v) {
			return fmt.Errorf("spec.volumes[%s]: Tether's volumes must stay", v.Name)
		}
	}
	bi := container(before.Spec.InitContainers, InitContainer)
	ai := container(after.Spec.InitContainers, InitContainer)
	if bi != nil && (ai == nil || !apiequality.Semantic.DeepEqual(*ai, *bi)) {
		return fmt.Errorf("spec.initContainers[%s]: it copies tether-shim and must stay", InitContainer)
	}
	return nil
}

func container(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}
