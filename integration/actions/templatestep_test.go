package actions

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The template's "$job" env, envFrom and volumeMounts reach a container
// step; fields an ephemeral container cannot have are named in a warning;
// no template shapes nothing; a broken template is an error naming it.
func TestShapeStep(t *testing.T) {
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "t.yaml")
	if err := os.WriteFile(tmpl, []byte(`spec:
  containers:
  - name: $job
    env:
    - name: FROM_TEMPLATE
      value: v
    envFrom:
    - configMapRef:
        name: cm
    volumeMounts:
    - name: extra
      mountPath: /extra
    resources:
      limits:
        cpu: "1"
  volumes:
  - name: extra
    emptyDir: {}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	base := func() *corev1.EphemeralContainer {
		return &corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Env:          []corev1.EnvVar{{Name: "PWD", Value: StepWorkspace}},
			VolumeMounts: []corev1.VolumeMount{{Name: workVolume, MountPath: WorkDir}},
		}}
	}
	ctr := base()
	var warnings []string
	warn := func(f string, a ...any) { warnings = append(warnings, f) }
	if err := shapeStep(ctr, tmpl, warn); err != nil {
		t.Fatal(err)
	}
	if len(ctr.Env) != 2 || ctr.Env[1].Name != "FROM_TEMPLATE" || ctr.Env[1].Value != "v" {
		t.Errorf("env %v", ctr.Env)
	}
	if len(ctr.EnvFrom) != 1 || ctr.EnvFrom[0].ConfigMapRef == nil || ctr.EnvFrom[0].ConfigMapRef.Name != "cm" {
		t.Errorf("envFrom %v", ctr.EnvFrom)
	}
	if len(ctr.VolumeMounts) != 2 || ctr.VolumeMounts[1].Name != "extra" || ctr.VolumeMounts[1].MountPath != "/extra" {
		t.Errorf("mounts %v", ctr.VolumeMounts)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "not applied to container steps") {
		t.Errorf("warnings %q: want one for resources", warnings)
	}

	plain := base()
	if err := shapeStep(plain, "", warn); err != nil || len(plain.Env) != 1 || len(plain.VolumeMounts) != 1 {
		t.Errorf("no template: %v, %+v", err, plain)
	}
	if err := shapeStep(base(), filepath.Join(dir, "missing.yaml"), warn); err == nil || !strings.Contains(err.Error(), EnvHookTemplate) {
		t.Errorf("a missing template: %v", err)
	}
}
