// Package dockeropts maps the docker create flags of a workflow
// container's options: (the runner's createOptions) onto a Kubernetes
// container: limits, user, privileges, capabilities, working directory,
// variables, entrypoint, host name and a health check as a probe. Flags
// without a Kubernetes meaning are listed, not refused. Pure: no I/O.
package dockeropts

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tether-ci/tether/integration/actions/internal/shell"
)

// Docker health check defaults (docker run --health-*), used where the
// options set a --health-cmd without the others.
const (
	dockerHealthInterval = 30 * time.Second
	dockerHealthTimeout  = 30 * time.Second
	dockerHealthRetries  = 3
)

// Options are the docker-create flags of a container's
// createOptions (the workflow's options:) that have a Kubernetes meaning.
type Options struct {
	// CPU and Memory are --cpus and --memory: the container's limits.
	CPU, Memory *resource.Quantity
	// User and Group are --user uid[:gid].
	User, Group *int64
	// Env are --env/-e KEY=VALUE.
	Env map[string]string
	// Workdir is --workdir/-w.
	Workdir string
	// Entrypoint is --entrypoint.
	Entrypoint string
	// Privileged is --privileged.
	Privileged bool
	// CapAdd and CapDrop are --cap-add and --cap-drop.
	CapAdd, CapDrop []corev1.Capability
	// Hostname is --hostname/-h.
	Hostname string
	// HealthCmd is --health-cmd (a shell command, docker's CMD-SHELL);
	// the other Health* fields are its --health-* settings.
	HealthCmd                                   string
	HealthInterval, HealthTimeout, HealthPeriod time.Duration
	HealthRetries                               int
	// Ignored are the flags without a Kubernetes meaning, as written.
	Ignored []string
}

// dockerBoolFlags are docker create's flags that take no value, so an
// ignored one does not swallow the next word.
var dockerBoolFlags = map[string]bool{
	"--init": true, "--interactive": true, "-i": true, "--tty": true, "-t": true, "--read-only": true,
	"--rm": true, "--no-healthcheck": true, "--oom-kill-disable": true, "--publish-all": true, "-P": true,
	"--detach": true, "-d": true, "--disable-content-trust": true, "--quiet": true, "-q": true,
	"--use-api-socket": true, "--sig-proxy": true, "--privileged": true,
}

// shortFlags maps docker's one-letter flags that Tether maps to their long
// names.
var shortFlags = map[string]string{"-m": "--memory", "-u": "--user", "-e": "--env", "-w": "--workdir", "-h": "--hostname"}

// Parse splits opts as a shell would (quotes group,
// backslashes escape, nothing expands) and maps the docker-create flags
// Tether understands. A malformed string (unbalanced quotes, a flag
// without its value, a bad size, number or duration) is an error.
func Parse(opts string) (*Options, error) {
	words, err := shell.SplitArgs([]string{opts})
	if err != nil {
		return nil, err
	}
	o := &Options{Env: map[string]string{}}
	for i := 0; i < len(words); i++ {
		w := words[i]
		if !strings.HasPrefix(w, "-") || w == "-" || w == "--" {
			return nil, fmt.Errorf("%q is not a flag: createOptions holds only docker create flags (an image or command goes elsewhere in the workflow)", w)
		}
		name, value, hasValue := strings.Cut(w, "=")
		if !strings.HasPrefix(w, "--") && len(w) > 2 {
			// -m512m, -eKEY=VALUE, -e=KEY=VALUE
			name, value, hasValue = w[:2], strings.TrimPrefix(w[2:], "="), true
		}
		if long, ok := shortFlags[name]; ok {
			name = long
		}
		if name == "--privileged" {
			if hasValue {
				b, err := strconv.ParseBool(value)
				if err != nil {
					return nil, fmt.Errorf("--privileged=%q: want true or false", value)
				}
				o.Privileged = b
			} else {
				o.Privileged = true
			}
			continue
		}
		if dockerBoolFlags[name] {
			o.Ignored = append(o.Ignored, w)
			continue
		}
		mapped := knownFlag(name)
		if !hasValue {
			if i+1 >= len(words) || (mapped && strings.HasPrefix(words[i+1], "-") && name != "--health-cmd") {
				if mapped {
					return nil, fmt.Errorf("%s needs a value", name)
				}
				o.Ignored = append(o.Ignored, w)
				continue
			}
			if !mapped && strings.HasPrefix(words[i+1], "-") {
				o.Ignored = append(o.Ignored, w)
				continue
			}
			i++
			value = words[i]
			w += " " + value
		}
		if !mapped {
			o.Ignored = append(o.Ignored, w)
			continue
		}
		if err := o.set(name, value); err != nil {
			return nil, fmt.Errorf("%s %q: %w", name, value, err)
		}
	}
	return o, nil
}

// knownFlag says whether name is a valued flag Parse maps.
func knownFlag(name string) bool {
	switch name {
	case "--cpus", "--memory", "--user", "--env", "--workdir", "--entrypoint", "--cap-add", "--cap-drop", "--hostname",
		"--health-cmd", "--health-interval", "--health-timeout", "--health-retries", "--health-start-period":
		return true
	}
	return false
}

// set applies one valued flag.
func (o *Options) set(name, value string) error {
	var err error
	switch name {
	case "--cpus":
		f, perr := strconv.ParseFloat(value, 64)
		if perr != nil || f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("want a number of CPUs above 0 such as 1.5")
		}
		q := resource.NewMilliQuantity(int64(math.Ceil(f*1000)), resource.DecimalSI)
		o.CPU = q
	case "--memory":
		n, perr := dockerBytes(value)
		if perr != nil {
			return perr
		}
		o.Memory = resource.NewQuantity(n, resource.BinarySI)
	case "--user":
		u, g, ok := strings.Cut(value, ":")
		uid, perr := strconv.ParseInt(u, 10, 64)
		if perr != nil || uid < 0 {
			return fmt.Errorf("want a numeric uid[:gid]: Kubernetes runs containers by number, not by user name")
		}
		o.User = &uid
		if ok {
			gid, perr := strconv.ParseInt(g, 10, 64)
			if perr != nil || gid < 0 {
				return fmt.Errorf("want a numeric uid[:gid]: Kubernetes runs containers by number, not by group name")
			}
			o.Group = &gid
		}
	case "--env":
		k, v, ok := strings.Cut(value, "=")
		if !ok {
			return fmt.Errorf("want KEY=VALUE: the runner's own environment is not passed into the pod")
		}
		if !shell.CanExport(k) {
			return fmt.Errorf("%q is not a variable name", k)
		}
		o.Env[k] = v
	case "--workdir":
		if !strings.HasPrefix(value, "/") {
			return fmt.Errorf("want an absolute path")
		}
		o.Workdir = value
	case "--entrypoint":
		o.Entrypoint = value
	case "--cap-add":
		o.CapAdd = append(o.CapAdd, capability(value))
	case "--cap-drop":
		o.CapDrop = append(o.CapDrop, capability(value))
	case "--hostname":
		o.Hostname = value
	case "--health-cmd":
		o.HealthCmd = value
	case "--health-interval":
		o.HealthInterval, err = healthDuration(value)
	case "--health-timeout":
		o.HealthTimeout, err = healthDuration(value)
	case "--health-start-period":
		o.HealthPeriod, err = healthDuration(value)
	case "--health-retries":
		o.HealthRetries, err = strconv.Atoi(value)
		if err != nil || o.HealthRetries < 0 {
			err = fmt.Errorf("want a number of retries, 0 or more")
		}
	}
	return err
}

// capability is docker's capability name as Kubernetes spells it
// (CAP_SYS_ADMIN and sys_admin → SYS_ADMIN).
func capability(v string) corev1.Capability {
	return corev1.Capability(strings.TrimPrefix(strings.ToUpper(v), "CAP_"))
}

// healthDuration parses a --health-* duration (Go syntax, as docker's).
func healthDuration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("want a duration such as 5s or 1m30s")
	}
	return d, nil
}

// dockerBytes parses docker's memory sizes: a number with an optional
// unit b, k, m or g (powers of 1024; kb, mb, gb too).
func dockerBytes(v string) (int64, error) {
	s := strings.TrimSuffix(strings.ToLower(v), "b")
	mult := int64(1)
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'k':
			mult, s = 1<<10, s[:n-1]
		case 'm':
			mult, s = 1<<20, s[:n-1]
		case 'g':
			mult, s = 1<<30, s[:n-1]
		case 't':
			mult, s = 1<<40, s[:n-1]
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 || f*float64(mult) > math.MaxInt64/2 {
		return 0, fmt.Errorf("want a size such as 512m or 2g")
	}
	return int64(f * float64(mult)), nil
}

// Probe is the health check as a Kubernetes probe (nil without
// --health-cmd): the command runs under /bin/sh -c, as docker's
// CMD-SHELL does, every interval; it may fail for the start period and
// then retries times more.
func (o *Options) Probe() *corev1.Probe {
	if o.HealthCmd == "" {
		return nil
	}
	interval := cmpDuration(o.HealthInterval, dockerHealthInterval)
	timeout := cmpDuration(o.HealthTimeout, dockerHealthTimeout)
	retries := o.HealthRetries
	if retries == 0 {
		retries = dockerHealthRetries
	}
	failures := retries + int(math.Ceil(float64(o.HealthPeriod)/float64(interval)))
	return &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", o.HealthCmd}}},
		PeriodSeconds:    int32(max(1, math.Ceil(interval.Seconds()))),
		TimeoutSeconds:   int32(max(1, math.Ceil(timeout.Seconds()))),
		FailureThreshold: int32(min(failures, math.MaxInt32)),
		SuccessThreshold: 1,
	}
}

func cmpDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// ApplyContainer puts the container-level options onto c: limits (a
// request above one is lowered to it, a missing one is zero), user,
// privileged, capabilities and working directory.
func (o *Options) ApplyContainer(c *corev1.Container) {
	if o.CPU != nil || o.Memory != nil {
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		for name, q := range map[corev1.ResourceName]*resource.Quantity{corev1.ResourceCPU: o.CPU, corev1.ResourceMemory: o.Memory} {
			if q == nil {
				continue
			}
			c.Resources.Limits[name] = *q
			// docker's --cpus and --memory cap a container without
			// reserving anything: the request stays the settings' (lowered
			// to the limit, or the pod would be invalid), else it is
			// explicitly zero so Kubernetes does not default it to the
			// limit and reserve the whole of it on the node.
			if c.Resources.Requests == nil {
				c.Resources.Requests = corev1.ResourceList{}
			}
			if r, ok := c.Resources.Requests[name]; !ok {
				c.Resources.Requests[name] = resource.Quantity{}
			} else if r.Cmp(*q) > 0 {
				c.Resources.Requests[name] = *q
			}
		}
	}
	if o.User != nil || o.Group != nil || o.Privileged || len(o.CapAdd)+len(o.CapDrop) > 0 {
		if c.SecurityContext == nil {
			c.SecurityContext = &corev1.SecurityContext{}
		}
		sc := c.SecurityContext
		if o.User != nil {
			sc.RunAsUser = o.User
		}
		if o.Group != nil {
			sc.RunAsGroup = o.Group
		}
		if o.Privileged {
			t := true
			sc.Privileged = &t
		}
		if len(o.CapAdd)+len(o.CapDrop) > 0 {
			if sc.Capabilities == nil {
				sc.Capabilities = &corev1.Capabilities{}
			}
			sc.Capabilities.Add = append(sc.Capabilities.Add, o.CapAdd...)
			sc.Capabilities.Drop = append(sc.Capabilities.Drop, o.CapDrop...)
		}
	}
	if o.Workdir != "" {
		c.WorkingDir = o.Workdir
	}
}
