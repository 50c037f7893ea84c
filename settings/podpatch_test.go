package settings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether-ci/tether/client/kube"
)

// --pod-patch reads the file into the spec with --pod-patch-type; bad
// combinations name the flag.
func TestPodPatchFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "patch.yaml")
	if err := os.WriteFile(path, []byte("metadata:\n  labels: {a: b}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := Pod{PodPatch: path, PodPatchType: "strategic"}
	var spec kube.Spec
	if err := f.ApplyTo(&spec); err != nil {
		t.Fatal(err)
	}
	if spec.PodPatch == nil || spec.PodPatch.Type != kube.PatchStrategic || !strings.Contains(string(spec.PodPatch.Data), "labels") || !f.IsSet() {
		t.Fatalf("spec.PodPatch %+v", spec.PodPatch)
	}
	for _, tc := range []struct {
		f    Pod
		want string
	}{
		{Pod{PodPatch: path, PodPatchType: "merge"}, `--pod-patch-type "merge": want strategic or json`},
		{Pod{PodPatchType: "json"}, "--pod-patch-type needs --pod-patch FILE"},
		{Pod{PodPatch: filepath.Join(t.TempDir(), "none.yaml")}, "--pod-patch: open"},
	} {
		var spec kube.Spec
		if err := tc.f.ApplyTo(&spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.f, err, tc.want)
		}
	}
}
