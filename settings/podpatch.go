package settings

import (
	"errors"
	"fmt"
	"os"

	"github.com/tether-ci/tether/client/kube"
)

// applyPodPatch reads --pod-patch into spec, typed by --pod-patch-type.
func (p *Pod) applyPodPatch(spec *kube.Spec) error {
	typ := kube.PatchType(p.PodPatchType)
	switch typ {
	case kube.PatchDetect, kube.PatchStrategic, kube.PatchJSON:
	default:
		return fmt.Errorf("--pod-patch-type %q: want strategic or json", p.PodPatchType)
	}
	if p.PodPatch == "" {
		if typ != kube.PatchDetect {
			return errors.New("--pod-patch-type needs --pod-patch FILE")
		}
		return nil
	}
	data, err := os.ReadFile(p.PodPatch)
	if err != nil {
		return fmt.Errorf("--pod-patch: %w", err)
	}
	spec.PodPatch = &kube.PodPatch{Type: typ, Data: data}
	return nil
}
