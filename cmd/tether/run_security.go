package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/tether-ci/tether/client/kube"
)

// uidFlag is an optional user ID flag (--run-as-user).
type uidFlag struct {
	set bool
	uid int64
}

// String returns the UID, or "" when the flag was not given.
func (u *uidFlag) String() string {
	if u == nil || !u.set {
		return ""
	}
	return strconv.FormatInt(u.uid, 10)
}

// Type names the value in the help text.
func (u *uidFlag) Type() string { return "UID" }

// Set parses a numeric user ID, 0 to 2147483647 as Kubernetes accepts.
func (u *uidFlag) Set(v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt32 {
		return fmt.Errorf("%q is not a user ID: want a number from 0 to %d", v, math.MaxInt32)
	}
	u.set, u.uid = true, n
	return nil
}

// optBool is a boolean flag that remembers whether it was given, so an
// explicit --read-only-root=false can override --restricted's default.
type optBool struct {
	set, v bool
}

// String returns "true" or "false" once given, else "".
func (b *optBool) String() string {
	if b == nil || !b.set {
		return ""
	}
	return strconv.FormatBool(b.v)
}

// Set parses a boolean ("--read-only-root" alone means true).
func (b *optBool) Set(v string) error {
	x, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("%q is not true or false", v)
	}
	b.set, b.v = true, x
	return nil
}

// Type names the value in the help text.
func (b *optBool) Type() string { return "bool" }

// IsBoolFlag lets the flag be given without a value.
func (b *optBool) IsBoolFlag() bool { return true }

// validateSecurity checks the pod security flags: Kubernetes only, and
// --restricted forbids running as root.
func (f *runFlags) validateSecurity() error {
	if !f.Restricted && !f.RunAsUser.set && !f.ReadOnlyRoot.set {
		return nil
	}
	if f.Local || f.Docker {
		return errors.New("--restricted, --run-as-user and --read-only-root apply to Kubernetes pods only, not to --local or --docker")
	}
	if f.Restricted && f.RunAsUser.set && f.RunAsUser.uid == 0 {
		return errors.New("--run-as-user 0 contradicts --restricted: the Pod Security Standard \"restricted\" forbids running as root")
	}
	return nil
}

// applySecurity sets the pod security fields of spec from the flags.
func (f *runFlags) applySecurity(spec *kube.Spec) {
	spec.Restricted = f.Restricted
	if !f.RunAsUser.set && !f.ReadOnlyRoot.set {
		return
	}
	sc := &corev1.SecurityContext{}
	if f.RunAsUser.set {
		sc.RunAsUser = new(f.RunAsUser.uid)
	}
	if f.ReadOnlyRoot.set {
		sc.ReadOnlyRootFilesystem = new(f.ReadOnlyRoot.v)
	}
	spec.SecurityContext = sc
}
