package shim

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// memCgroup is the memory cgroup the shim (and so every script) runs in,
// read to tell an out-of-memory kill from any other SIGKILL.
type memCgroup struct {
	dir string // the cgroup's directory; "" = unknown
	v2  bool
}

// findMemCgroup locates the shim's memory cgroup from /proc/self/cgroup
// and /proc/self/mountinfo (passed as paths so tests can fake them).
func findMemCgroup(cgroupFile, mountinfoFile string) memCgroup {
	cg, err := os.ReadFile(cgroupFile)
	if err != nil {
		return memCgroup{}
	}
	var v1Path, v2Path string
	haveV2 := false
	for _, line := range strings.Split(string(cg), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2Path, haveV2 = parts[2], true
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "memory" {
				v1Path = parts[2]
			}
		}
	}
	mi, err := os.ReadFile(mountinfoFile)
	if err != nil {
		return memCgroup{}
	}
	var v2Mount memCgroup
	for _, line := range strings.Split(string(mi), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		root, mountpoint, fstype := f[3], f[4], g[0]
		switch {
		case fstype == "cgroup" && v1Path != "" && hasOpt(g[2], "memory"):
			return memCgroup{dir: cgroupDir(mountpoint, root, v1Path)}
		case fstype == "cgroup2" && haveV2:
			v2Mount = memCgroup{dir: cgroupDir(mountpoint, root, v2Path), v2: true}
		}
	}
	return v2Mount
}

func hasOpt(opts, name string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == name {
			return true
		}
	}
	return false
}

// cgroupDir maps a cgroup path to its directory under a mount of root.
func cgroupDir(mountpoint, root, path string) string {
	if root != "/" {
		if rel, ok := strings.CutPrefix(path, root); ok {
			path = rel
		}
	}
	return filepath.Join(mountpoint, path)
}

// counterPath is the file that holds the cgroup's OOM-kill counter.
func (c memCgroup) counterPath() string {
	if c.v2 {
		return filepath.Join(c.dir, "memory.events")
	}
	return filepath.Join(c.dir, "memory.oom_control")
}

// parseOOMKills finds the "oom_kill N" line of a counter file.
func parseOOMKills(b []byte) (uint64, bool) {
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		if v, ok := bytes.CutPrefix(line, []byte("oom_kill ")); ok {
			n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// limit returns the cgroup's memory limit in bytes, 0 when none or unknown.
func (c memCgroup) limit() int64 {
	if c.dir == "" {
		return 0
	}
	name := "memory.limit_in_bytes"
	if c.v2 {
		name = "memory.max"
	}
	b, err := os.ReadFile(filepath.Join(c.dir, name))
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 { // "max", or v1's "unlimited" page-rounded maximum
		return 0
	}
	return n
}
