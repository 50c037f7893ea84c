package dockerengine

import "golang.org/x/sys/unix"

// maxNofile caps the open-files limit, as Docker's own default does.
const maxNofile = 1 << 20

// maxNproc caps the process limit of the fallback; rootful Podman without
// CAP_SYS_RESOURCE cannot raise it beyond its own (often pid_max).
const maxNproc = 4096

// FallbackUlimits returns resource limits an engine running with this
// process's privileges can apply: nofile at this process's hard limit (at
// most 1048576) and nproc at most 4096. StartJob uses them when the
// engine's defaults fail.
func FallbackUlimits() []Ulimit {
	return []Ulimit{
		limit("nofile", unix.RLIMIT_NOFILE, maxNofile),
		limit("nproc", unix.RLIMIT_NPROC, maxNproc),
	}
}

// limit returns soft = hard = min(this process's hard limit, max).
func limit(name string, resource int, max uint64) Ulimit {
	v := max
	var r unix.Rlimit
	if unix.Getrlimit(resource, &r) == nil && r.Max < v {
		v = r.Max
	}
	return Ulimit{Name: name, Soft: int64(v), Hard: int64(v)}
}
