package kube

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Security defaults (see Spec.Restricted and the init container).
const (
	// RestrictedUID is the user the build container runs as under
	// Spec.Restricted when neither Spec.PodSecurityContext nor
	// Spec.SecurityContext names one, and the init container's user unless
	// the pod-level context names one. 65532 is the conventional "nonroot"
	// user of distroless images and the helper image's USER; an image needs
	// no /etc/passwd entry for it.
	RestrictedUID int64 = 65532
	// TmpDir is where an emptyDir is mounted in the build container when its
	// root filesystem is read-only, so shells and tools that write temporary
	// files keep working.
	TmpDir = "/tmp"
)

// capAll is the capability name that stands for all of them.
const capAll corev1.Capability = "ALL"

// capNetBindService is the one capability the "restricted" profile lets a
// container add.
const capNetBindService corev1.Capability = "NET_BIND_SERVICE"

// securityDefaults validates the caller's security settings and returns
// deep copies of them with Spec.Restricted's defaults filled in where the
// caller left a field unset. The caller's structs are never modified.
func (s Spec) securityDefaults() (*corev1.PodSecurityContext, *corev1.SecurityContext, error) {
	pod := s.PodSecurityContext.DeepCopy()
	ctr := s.SecurityContext.DeepCopy()
	if err := checkUIDs(pod, ctr); err != nil {
		return nil, nil, err
	}
	if !s.Restricted {
		return pod, ctr, nil
	}
	if pod == nil {
		pod = &corev1.PodSecurityContext{}
	}
	if ctr == nil {
		ctr = &corev1.SecurityContext{}
	}
	if pod.SeccompProfile == nil {
		pod.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	}
	if ctr.AllowPrivilegeEscalation == nil {
		ctr.AllowPrivilegeEscalation = new(false)
	}
	if ctr.Capabilities == nil {
		ctr.Capabilities = &corev1.Capabilities{}
	}
	if len(ctr.Capabilities.Drop) == 0 {
		ctr.Capabilities.Drop = []corev1.Capability{capAll}
	}
	if pod.RunAsNonRoot == nil && ctr.RunAsNonRoot == nil {
		ctr.RunAsNonRoot = new(true)
	}
	if pod.RunAsUser == nil && ctr.RunAsUser == nil {
		ctr.RunAsUser = new(RestrictedUID)
	}
	if ctr.ReadOnlyRootFilesystem == nil {
		ctr.ReadOnlyRootFilesystem = new(true)
	}
	if err := restrictedConflicts(pod, ctr); err != nil {
		return nil, nil, err
	}
	return pod, ctr, nil
}

// checkUIDs rejects user IDs Kubernetes would refuse.
func checkUIDs(pod *corev1.PodSecurityContext, ctr *corev1.SecurityContext) error {
	check := func(field string, uid *int64) error {
		if uid != nil && (*uid < 0 || *uid > math.MaxInt32) {
			return fmt.Errorf("kube: %s=%d: a user ID is between 0 and %d", field, *uid, math.MaxInt32)
		}
		return nil
	}
	var errs []error
	if pod != nil {
		errs = append(errs, check("Spec.PodSecurityContext.RunAsUser", pod.RunAsUser))
	}
	if ctr != nil {
		errs = append(errs, check("Spec.SecurityContext.RunAsUser", ctr.RunAsUser))
	}
	return errors.Join(errs...)
}

// restrictedConflicts explains every explicit setting in pod and ctr that
// the Pod Security Standard "restricted" forbids (a namespace enforcing it
// would reject the pod), or returns nil. The namespace's admission stays the
// final judge; this catches the settings a runner passes through.
func restrictedConflicts(pod *corev1.PodSecurityContext, ctr *corev1.SecurityContext) error {
	var bad []string
	if ctr.Privileged != nil && *ctr.Privileged {
		bad = append(bad, "SecurityContext.Privileged=true (restricted forbids privileged containers)")
	}
	if *ctr.AllowPrivilegeEscalation {
		bad = append(bad, "SecurityContext.AllowPrivilegeEscalation=true (restricted requires false)")
	}
	if !slices.Contains(ctr.Capabilities.Drop, capAll) {
		bad = append(bad, fmt.Sprintf("SecurityContext.Capabilities.Drop=%v (restricted requires dropping ALL)", ctr.Capabilities.Drop))
	}
	for _, c := range ctr.Capabilities.Add {
		if c != capNetBindService {
			bad = append(bad, fmt.Sprintf("SecurityContext.Capabilities.Add %s (restricted allows adding only NET_BIND_SERVICE)", c))
		}
	}
	if pod.RunAsNonRoot != nil && !*pod.RunAsNonRoot {
		bad = append(bad, "PodSecurityContext.RunAsNonRoot=false (restricted requires true)")
	}
	if ctr.RunAsNonRoot != nil && !*ctr.RunAsNonRoot {
		bad = append(bad, "SecurityContext.RunAsNonRoot=false (restricted requires true)")
	}
	if pod.RunAsUser != nil && *pod.RunAsUser == 0 {
		bad = append(bad, "PodSecurityContext.RunAsUser=0 (restricted forbids root)")
	}
	if ctr.RunAsUser != nil && *ctr.RunAsUser == 0 {
		bad = append(bad, "SecurityContext.RunAsUser=0 (restricted forbids root)")
	}
	if p := pod.SeccompProfile; p != nil && p.Type == corev1.SeccompProfileTypeUnconfined {
		bad = append(bad, "PodSecurityContext.SeccompProfile Unconfined (restricted requires RuntimeDefault or Localhost)")
	}
	if p := ctr.SeccompProfile; p != nil && p.Type == corev1.SeccompProfileTypeUnconfined {
		bad = append(bad, "SecurityContext.SeccompProfile Unconfined (restricted requires RuntimeDefault or Localhost)")
	}
	if p := pod.AppArmorProfile; p != nil && p.Type == corev1.AppArmorProfileTypeUnconfined {
		bad = append(bad, "PodSecurityContext.AppArmorProfile Unconfined (restricted forbids it)")
	}
	if p := ctr.AppArmorProfile; p != nil && p.Type == corev1.AppArmorProfileTypeUnconfined {
		bad = append(bad, "SecurityContext.AppArmorProfile Unconfined (restricted forbids it)")
	}
	if ctr.ProcMount != nil && *ctr.ProcMount != corev1.DefaultProcMount {
		bad = append(bad, fmt.Sprintf("SecurityContext.ProcMount=%s (restricted requires Default)", *ctr.ProcMount))
	}
	if w := ctr.WindowsOptions; w != nil && w.HostProcess != nil && *w.HostProcess {
		bad = append(bad, "SecurityContext.WindowsOptions.HostProcess=true (restricted forbids host processes)")
	}
	if w := pod.WindowsOptions; w != nil && w.HostProcess != nil && *w.HostProcess {
		bad = append(bad, "PodSecurityContext.WindowsOptions.HostProcess=true (restricted forbids host processes)")
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("kube: Spec.Restricted conflicts with the explicit %s: "+
		"a namespace enforcing the Pod Security Standard \"restricted\" would reject the pod; "+
		"remove these settings or turn Restricted off", strings.Join(bad, "; "))
}

// initSecurityContext returns the init container's security context: it
// passes the "restricted" profile whatever the build container does (with
// the pod-level seccomp profile Spec.Restricted sets). The helper image has
// no shell and `tether-shim copy` writes only into the shared emptyDir, so a
// read-only root and no capabilities cost nothing. The init container runs
// as RestrictedUID unless the pod-level context names a non-root user,
// which it then inherits (a pod-level root user would contradict
// RunAsNonRoot, so it is overridden).
func initSecurityContext(pod *corev1.PodSecurityContext) *corev1.SecurityContext {
	sc := &corev1.SecurityContext{
		AllowPrivilegeEscalation: new(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{capAll}},
		ReadOnlyRootFilesystem:   new(true),
		RunAsNonRoot:             new(true),
	}
	if pod == nil || pod.RunAsUser == nil || *pod.RunAsUser == 0 {
		sc.RunAsUser = new(RestrictedUID)
	}
	return sc
}

// readOnlyRoot reports whether ctr makes the container's root filesystem
// read-only.
func readOnlyRoot(ctr *corev1.SecurityContext) bool {
	return ctr != nil && ctr.ReadOnlyRootFilesystem != nil && *ctr.ReadOnlyRootFilesystem
}

// podSecurityHint is the advice for a pod that Pod Security admission
// rejected.
const podSecurityHint = " (the namespace enforces a Pod Security Standard: set Spec.Restricted, " +
	"`tether run --restricted`, so the pod passes \"restricted\")"

// podSecurityRejected reports whether err is Pod Security admission's
// rejection of a pod ("violates PodSecurity ...").
func podSecurityRejected(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "violates PodSecurity")
}
