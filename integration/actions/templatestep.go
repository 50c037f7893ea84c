package actions

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// shapeStep applies the hook template's "$job" container to a container
// step, as the reference hook applies the template to its step pods: its
// env, envFrom and volumeMounts are appended (the template's volumes are
// in the job pod already, prepare_job added them). The step's
// securityContext is the job container's, which the template shaped. Any
// other field of "$job" cannot be given to an ephemeral container
// (resources, ports, probes, ...) or is Tether's (command, args): warn
// names each. A template path of "" shapes nothing.
func shapeStep(ctr *corev1.EphemeralContainer, templatePath string, warn func(string, ...any)) error {
	if templatePath == "" {
		return nil
	}
	t, err := readTemplate(templatePath)
	if err != nil {
		return err
	}
	fields := t.containers[templateJob]
	for _, k := range sortedKeys(fields) {
		var err error
		switch k {
		case "name", "image", "securityContext":
		case "env":
			var add []corev1.EnvVar
			if err = json.Unmarshal(fields[k], &add); err == nil {
				ctr.Env = append(ctr.Env, add...)
			}
		case "envFrom":
			var add []corev1.EnvFromSource
			if err = json.Unmarshal(fields[k], &add); err == nil {
				ctr.EnvFrom = append(ctr.EnvFrom, add...)
			}
		case "volumeMounts":
			var add []corev1.VolumeMount
			if err = json.Unmarshal(fields[k], &add); err == nil {
				ctr.VolumeMounts = append(ctr.VolumeMounts, add...)
			}
		default:
			warn("the hook template's spec.containers[%s].%s is not applied to container steps (they run as ephemeral containers of the job's pod)", templateJob, k)
		}
		if err != nil {
			return fmt.Errorf("%s %s: spec.containers[%s].%s: %w", EnvHookTemplate, templatePath, templateJob, k, err)
		}
	}
	return nil
}
