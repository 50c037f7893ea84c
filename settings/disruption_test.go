package settings

import (
	"testing"

	"github.com/tether-ci/tether/client/kube"
)

// The protection from voluntary disruption is on unless the config file's
// key (or its flag) turns it off, and it reaches the built pod.
func TestDisruptionProtectionSetting(t *testing.T) {
	for _, tc := range []struct {
		file    string
		protect bool
	}{{"cpu: 1\n", true}, {"no-disruption-protection: true\n", false}, {"no-disruption-protection: false\n", true}} {
		var s integration
		fs := s.flagSet()
		if err := fs.Parse([]string{"--config", writeFile(t, tc.file)}); err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(fs); err != nil {
			t.Fatal(err)
		}
		spec := kube.Spec{Namespace: "ci", Name: "job", JobID: "job", Image: "busybox", Serve: true}
		if err := s.ApplyTo(&spec); err != nil {
			t.Fatal(err)
		}
		objs, err := kube.Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		a := objs.Pod.Annotations
		if objs.Protect != tc.protect || (a[kube.AnnotationSafeToEvict] == "false") != tc.protect || (a[kube.AnnotationDoNotDisrupt] == "true") != tc.protect {
			t.Errorf("%q: Protect %v, annotations %v; want protected %v", tc.file, objs.Protect, a, tc.protect)
		}
	}
}
