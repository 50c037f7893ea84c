package settings

import (
	"errors"
	"fmt"
	"math"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"

	"github.com/tether-ci/tether/client/kube"
)

// Security are the pod security settings (Kubernetes only): the Pod
// Security Standard "restricted", the build container's user and a
// read-only root filesystem. A nil pointer is "not set".
type Security struct {
	Restricted   bool   // --restricted: pass the Pod Security Standard "restricted"
	RunAsUser    *int64 // --run-as-user UID: the build container's user ID, 0 to 2147483647
	ReadOnlyRoot *bool  // --read-only-root[=false]: read-only root filesystem (an emptyDir at /tmp)
}

// AddFlags registers --restricted, --run-as-user and --read-only-root on fs.
func (s *Security) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&s.Restricted, "restricted", false, "make the pod pass the Pod Security Standard \"restricted\": non-root (user 65532 unless --run-as-user), no capabilities or privilege escalation, RuntimeDefault seccomp, read-only root with /tmp an emptyDir (Kubernetes)")
	fs.Var(&uidValue{&s.RunAsUser}, "run-as-user", "run the build container as user `UID` (Kubernetes; with --restricted not 0)")
	fs.Var(&optionalBool{&s.ReadOnlyRoot}, "read-only-root", "make the build container's root filesystem read-only, with an emptyDir at /tmp (Kubernetes; implied by --restricted, which --read-only-root=false overrides)")
	fs.Lookup("read-only-root").NoOptDefVal = "true" // "--read-only-root" alone
}

// IsSet reports whether a security setting is set: a command with a
// backend that makes no pod refuses them.
func (s *Security) IsSet() bool {
	return s.Restricted || s.RunAsUser != nil || s.ReadOnlyRoot != nil
}

// Validate checks the settings: --restricted forbids running as root.
func (s *Security) Validate() error {
	if s.RunAsUser != nil && (*s.RunAsUser < 0 || *s.RunAsUser > math.MaxInt32) { // filled in Go: the flag checks its own
		return fmt.Errorf("--run-as-user %d is not a user ID: want a number from 0 to %d", *s.RunAsUser, math.MaxInt32)
	}
	if s.Restricted && s.RunAsUser != nil && *s.RunAsUser == 0 {
		return errors.New("--run-as-user 0 contradicts --restricted: the Pod Security Standard \"restricted\" forbids running as root")
	}
	return nil
}

// ApplyTo sets the pod security fields of spec: Restricted, and a
// SecurityContext for the build container when the user or the root
// filesystem is set. Validate first.
func (s *Security) ApplyTo(spec *kube.Spec) {
	spec.Restricted = s.Restricted
	if s.RunAsUser == nil && s.ReadOnlyRoot == nil {
		return
	}
	sc := &corev1.SecurityContext{}
	if s.RunAsUser != nil {
		sc.RunAsUser = new(*s.RunAsUser)
	}
	if s.ReadOnlyRoot != nil {
		sc.ReadOnlyRootFilesystem = new(*s.ReadOnlyRoot)
	}
	spec.SecurityContext = sc
}
