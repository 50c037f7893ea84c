package settings

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Resources are one container's requests and limits as its four flags
// take them: --PREFIXcpu and --PREFIXmemory (request = limit), and
// --PREFIXrequests and --PREFIXlimits (cpu=…,memory=…, over the first two).
// Values are Kubernetes quantities ("500m", "2", "512Mi").
type Resources struct {
	// prefix is the flags' prefix ("service-": --service-cpu), set by
	// AddFlags, for the messages.
	prefix string

	CPU, Memory, Requests, Limits string
}

// AddFlags registers the four flags on fs, each name prefixed by prefix
// ("" for the build container's --cpu, "gitlab-helper-" for
// --gitlab-helper-cpu), their help text naming what ("the build
// container"). Requirements' messages then name these flags.
func (r *Resources) AddFlags(fs *pflag.FlagSet, prefix, what string) {
	r.prefix = prefix
	fs.StringVar(&r.CPU, r.prefix+"cpu", "", "CPU of "+what+", as request and limit (e.g. 500m, 2) (Kubernetes)")
	fs.StringVar(&r.Memory, r.prefix+"memory", "", "memory of "+what+", as request and limit (e.g. 512Mi) (Kubernetes)")
	fs.StringVar(&r.Requests, r.prefix+"requests", "", "resource requests of "+what+", `cpu=...,memory=...` (over --"+r.prefix+"cpu/--"+r.prefix+"memory) (Kubernetes)")
	fs.StringVar(&r.Limits, r.prefix+"limits", "", "resource limits of "+what+", `cpu=...,memory=...` (over --"+r.prefix+"cpu/--"+r.prefix+"memory) (Kubernetes)")
}

// IsSet reports whether one of the four is set.
func (r *Resources) IsSet() bool {
	return r.CPU != "" || r.Memory != "" || r.Requests != "" || r.Limits != ""
}

// Requirements returns the requests and limits; every error names its
// flag (as AddFlags registered it; unprefixed when r was filled in Go).
func (r *Resources) Requirements() (corev1.ResourceRequirements, error) {
	return r.requirements(r.prefix)
}

// requirements is Requirements with the flags named --PREFIX….
func (r *Resources) requirements(prefix string) (corev1.ResourceRequirements, error) {
	var rr corev1.ResourceRequirements
	flag := func(name string) string { return "--" + prefix + name }
	both := func(flagName, value string, name corev1.ResourceName) error {
		if value == "" {
			return nil
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return fmt.Errorf("%s %q is not a quantity (e.g. 500m, 2, 512Mi): %w", flagName, value, err)
		}
		if rr.Requests == nil {
			rr.Requests, rr.Limits = corev1.ResourceList{}, corev1.ResourceList{}
		}
		rr.Requests[name], rr.Limits[name] = q, q
		return nil
	}
	if err := both(flag("cpu"), r.CPU, corev1.ResourceCPU); err != nil {
		return rr, err
	}
	if err := both(flag("memory"), r.Memory, corev1.ResourceMemory); err != nil {
		return rr, err
	}
	for _, x := range []struct {
		flag, value string
		into        *corev1.ResourceList
	}{{flag("requests"), r.Requests, &rr.Requests}, {flag("limits"), r.Limits, &rr.Limits}} {
		if x.value == "" {
			continue
		}
		for _, kv := range strings.Split(x.value, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" || v == "" {
				return rr, fmt.Errorf("%s %q: want NAME=QUANTITY[,NAME=QUANTITY…] (e.g. cpu=500m,memory=1Gi)", x.flag, x.value)
			}
			q, err := resource.ParseQuantity(v)
			if err != nil {
				return rr, fmt.Errorf("%s: %s=%q is not a quantity: %w", x.flag, k, v, err)
			}
			if *x.into == nil {
				*x.into = corev1.ResourceList{}
			}
			(*x.into)[corev1.ResourceName(k)] = q
		}
	}
	for name, req := range rr.Requests {
		if lim, ok := rr.Limits[name]; ok && req.Cmp(lim) > 0 {
			return rr, fmt.Errorf("the %s request %s is more than its limit %s (%s/%s, %s, %s)", name, req.String(), lim.String(),
				flag("cpu"), flag("memory"), flag("requests"), flag("limits"))
		}
	}
	return rr, nil
}
