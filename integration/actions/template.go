package actions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/tether-ci/tether/client/kube"
)

// EnvHookTemplate names the hook template: a YAML file of a
// PodTemplateSpec that shapes the job pod (ARC mounts it into the runner's
// pod and sets this variable; the runner's container hooks document it as
// their "hook extension").
const EnvHookTemplate = "ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE"

// templateJob is the template container that merges into the job
// container; "$" and a service's name merges into that service.
const (
	templatePrefix = "$"
	templateJob    = templatePrefix + "job"
)

// maxTemplate bounds the template file.
const maxTemplate = 1 << 20

// podTemplate is a parsed hook template: the typed PodTemplateSpec and,
// for the fields the reference hook copies key by key, the keys the file
// sets (a zero value in the typed struct cannot say whether it was set).
type podTemplate struct {
	path string
	spec corev1.PodTemplateSpec
	// specKeys are the pod spec's keys in the file, with their JSON.
	specKeys map[string]json.RawMessage
	// containers are the file's containers' keys, by container name.
	containers map[string]map[string]json.RawMessage
}

// readTemplate reads and checks the hook template at path.
func readTemplate(path string) (*podTemplate, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read the hook template: %w", EnvHookTemplate, err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, maxTemplate+1)); err != nil {
		return nil, fmt.Errorf("%s %s: cannot read the hook template: %w", EnvHookTemplate, path, err)
	}
	if buf.Len() > maxTemplate {
		return nil, fmt.Errorf("%s %s: the hook template is larger than %d bytes", EnvHookTemplate, path, maxTemplate)
	}
	t, err := parseTemplate(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", EnvHookTemplate, path, err)
	}
	t.path = path
	return t, nil
}

// parseTemplate parses a PodTemplateSpec in YAML or JSON: unknown fields
// are errors, so a misspelt key is not silently dropped.
func parseTemplate(b []byte) (*podTemplate, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, errors.New("the hook template is empty: want a PodTemplateSpec (metadata:, spec:)")
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("the hook template is not valid YAML: %w", err)
	}
	t := &podTemplate{}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t.spec); err != nil {
		return nil, fmt.Errorf("the hook template is not a PodTemplateSpec (metadata:, spec:): %w", err)
	}
	var raw struct {
		Spec struct {
			Containers []map[string]json.RawMessage `json:"containers"`
		} `json:"spec"`
	}
	var rawSpec struct {
		Spec map[string]json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(j, &raw); err != nil {
		return nil, fmt.Errorf("the hook template's containers: %w", err)
	}
	if err := json.Unmarshal(j, &rawSpec); err != nil {
		return nil, fmt.Errorf("the hook template's spec: %w", err)
	}
	t.specKeys = rawSpec.Spec
	t.containers = map[string]map[string]json.RawMessage{}
	for i, c := range raw.Spec.Containers {
		var name string
		if err := json.Unmarshal(c["name"], &name); err != nil || name == "" {
			return nil, fmt.Errorf("spec.containers[%d] has no name: name it %s (the job container), %s<service> or a sidecar's name", i, templateJob, templatePrefix)
		}
		if _, dup := t.containers[name]; dup {
			return nil, fmt.Errorf("spec.containers: %s appears twice", name)
		}
		t.containers[name] = c
	}
	return t, nil
}

// templateRefused are pod spec keys a template may not set: Tether's pod
// needs them as it builds them.
var templateRefused = map[string]string{
	"restartPolicy":  "the pod must never restart tether-shim (its exit is the job's end)",
	"initContainers": "the first init container copies tether-shim and the services are native sidecars: add sidecars under containers",
}

// apply merges t into pod the reference hook's way
// (packages/k8s/src/k8s/utils.ts mergePodSpecWithOptions,
// mergeContainerWithOptions, mergeObjectMeta): labels and annotations are
// added; pod spec fields other than containers and volumes replace
// Tether's; volumes are appended; the container "$job" merges into the
// job container and "$<service>" into that service (env, envFrom,
// volumeMounts and ports appended, other fields replace, name and image
// ignored); other containers are added as native sidecars. services maps
// a service's name (imageAlias) to its container's name in pod. A field
// that would break Tether's pod is an error naming it; warn receives the
// ignored fields.
func (t *podTemplate) apply(pod *corev1.Pod, services map[string]string, warn func(string, ...any)) error {
	before := pod.DeepCopy()
	for k, v := range t.spec.Labels {
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		if _, own := before.Labels[k]; !own {
			pod.Labels[k] = v
		}
	}
	for k, v := range t.spec.Annotations {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		if _, own := before.Annotations[k]; !own {
			pod.Annotations[k] = v
		}
	}
	spec, err := toMap(pod.Spec)
	if err != nil {
		return err
	}
	for _, k := range sortedKeys(t.specKeys) {
		if why, bad := templateRefused[k]; bad {
			return fmt.Errorf("spec.%s: a template may not set it: %s", k, why)
		}
		switch k {
		case "containers":
		case "volumes":
			for _, v := range t.spec.Spec.Volumes {
				if slices.ContainsFunc(pod.Spec.Volumes, func(x corev1.Volume) bool { return x.Name == v.Name }) {
					return fmt.Errorf("spec.volumes[%s]: the pod already has a volume of that name (Tether's own, a setting's or a workflow volume's)", v.Name)
				}
			}
			var vols []json.RawMessage
			if err := json.Unmarshal(spec["volumes"], &vols); err != nil && spec["volumes"] != nil {
				return fmt.Errorf("the pod's volumes: %w", err)
			}
			var add []json.RawMessage
			if err := json.Unmarshal(t.specKeys[k], &add); err != nil {
				return fmt.Errorf("spec.volumes: %w", err)
			}
			if spec["volumes"], err = json.Marshal(append(vols, add...)); err != nil {
				return err
			}
		default:
			spec[k] = t.specKeys[k]
		}
	}
	var ps corev1.PodSpec
	if err := fromMap(spec, &ps); err != nil {
		return fmt.Errorf("the pod with the template's spec: %w", err)
	}
	pod.Spec = ps
	for _, name := range sortedKeys(t.containers) {
		fields := t.containers[name]
		var target *corev1.Container
		switch {
		case name == templateJob:
			target = &pod.Spec.Containers[0]
		case strings.HasPrefix(name, templatePrefix):
			svc, ok := services[strings.TrimPrefix(name, templatePrefix)]
			if !ok {
				return fmt.Errorf("spec.containers[%s]: the job has no service of that name (a service is named after its image: postgres:16 is %spostgres)", name, templatePrefix)
			}
			target = findContainer(pod.Spec.InitContainers, svc)
		default:
			var c corev1.Container
			if err := json.Unmarshal(mustJSON(fields), &c); err != nil {
				return fmt.Errorf("spec.containers[%s]: %w", name, err)
			}
			if c.Image == "" {
				return fmt.Errorf("spec.containers[%s] has no image: a sidecar needs one", name)
			}
			if findContainer(pod.Spec.InitContainers, c.Name) != nil || findContainer(pod.Spec.Containers, c.Name) != nil {
				return fmt.Errorf("spec.containers[%s]: the pod already has a container of that name", name)
			}
			always := corev1.ContainerRestartPolicyAlways
			c.RestartPolicy = &always
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
			continue
		}
		if err := mergeContainer(target, fields, name, warn); err != nil {
			return err
		}
	}
	return checkShaped(before, pod, "the hook template")
}

// mergeContainer merges a template container's fields into c.
func mergeContainer(c *corev1.Container, fields map[string]json.RawMessage, name string, warn func(string, ...any)) error {
	m, err := toMap(c)
	if err != nil {
		return err
	}
	for _, k := range sortedKeys(fields) {
		switch k {
		case "name":
		case "image":
			warn("the hook template's spec.containers[%s].image is ignored: the workflow names the image", name)
		case "env", "envFrom", "volumeMounts", "ports":
			var have, add []json.RawMessage
			if m[k] != nil {
				if err := json.Unmarshal(m[k], &have); err != nil {
					return err
				}
			}
			if err := json.Unmarshal(fields[k], &add); err != nil {
				return fmt.Errorf("spec.containers[%s].%s: %w", name, k, err)
			}
			if m[k], err = json.Marshal(append(have, add...)); err != nil {
				return err
			}
		default:
			m[k] = fields[k]
		}
	}
	var merged corev1.Container
	if err := fromMap(m, &merged); err != nil {
		return fmt.Errorf("spec.containers[%s]: %w", name, err)
	}
	*c = merged
	return nil
}

// checkShaped returns an error naming what of after, the pod Build made
// (before) reshaped by what, breaks Tether's pod: kube.CheckInvariants,
// plus the job's variables, the deadline and mounts over /tether.
func checkShaped(before, after *corev1.Pod, what string) error {
	if err := kube.CheckInvariants(before, after); err != nil {
		return fmt.Errorf("%s changes %w", what, err)
	}
	b, a := before.Spec.ActiveDeadlineSeconds, after.Spec.ActiveDeadlineSeconds
	if b != nil && (a == nil || *a > *b) {
		return fmt.Errorf("%s changes spec.activeDeadlineSeconds: it may only lower the pod's deadline (%d s, the job timeout %s and a margin)", what, *b, EnvJobTimeout)
	}
	for _, ef := range before.Spec.Containers[0].EnvFrom {
		if !slices.ContainsFunc(after.Spec.Containers[0].EnvFrom, func(x corev1.EnvFromSource) bool {
			return x.SecretRef != nil && ef.SecretRef != nil && x.SecretRef.Name == ef.SecretRef.Name
		}) {
			return fmt.Errorf("%s changes the job container's envFrom: the job's variables come from Tether's Secret %s", what, ef.SecretRef.Name)
		}
	}
	b0 := before.Spec.Containers[0]
	for _, m := range after.Spec.Containers[0].VolumeMounts {
		if slices.Contains(b0.VolumeMounts, m) {
			continue
		}
		if p := strings.TrimRight(m.MountPath, "/"); p == "" || p == "/tether" || strings.HasPrefix(p, "/tether/") {
			return fmt.Errorf("%s mounts %s at %s in the job container: it would cover /tether, where the shim lives", what, m.Name, m.MountPath)
		}
	}
	for _, c := range after.Spec.Containers[0:1] {
		if c.TTY || c.StdinOnce {
			return fmt.Errorf("%s sets tty or stdinOnce on the job container: the shim's stream needs a plain, open stdin", what)
		}
	}
	return nil
}

func findContainer(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

func toMap(v any) (map[string]json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", v, err)
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decode %T: %w", v, err)
	}
	return m, nil
}

func fromMap(m map[string]json.RawMessage, v any) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func mustJSON(m map[string]json.RawMessage) []byte {
	b, _ := json.Marshal(m) // a map of raw JSON always encodes
	return b
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
