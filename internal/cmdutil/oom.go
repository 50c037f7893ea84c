package cmdutil

import (
	"errors"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tether-ci/tether/client/kube"
)

// OOMText says a script was killed for memory, with the limit in the
// units Kubernetes users write ("out of memory (limit 64Mi)").
func OOMText(limit int64) string {
	if limit <= 0 {
		return "out of memory"
	}
	format := resource.BinarySI
	if limit%1024 != 0 {
		format = resource.DecimalSI
	}
	return "out of memory (limit " + resource.NewQuantity(limit, format).String() + ")"
}

// ExitOOMKilled is tether's exit code when the job's container was
// OOMKilled before the job reported its result: 128+SIGKILL, the code of a
// script the OOM killer ended.
const ExitOOMKilled = 137

// ContainerOOM returns the *kube.ContainerEndedError in err when the
// kernel's OOM killer ended the job's whole container (the shim with it),
// else nil.
func ContainerOOM(err error) *kube.ContainerEndedError {
	var ended *kube.ContainerEndedError
	if errors.As(err, &ended) && ended.OOMKilled() {
		return ended
	}
	return nil
}
