package shim

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFindMemCgroupAndCounters(t *testing.T) {
	dir := t.TempDir()
	v1 := filepath.Join(dir, "v1")
	v2 := filepath.Join(dir, "v2")
	cases := []struct {
		name, cgroup, mountinfo, wantDir string
		v2                               bool
		counterFile, counter, limitFile  string
		limit                            string
		wantLimit                        int64
	}{
		{
			name:        "v1",
			cgroup:      "12:pids:/x\n4:memory:/kubepods/pod1/c1\n0::/\n",
			mountinfo:   "35 31 0:32 / " + v1 + " rw,relatime - cgroup cgroup rw,memory\n36 31 0:33 / /other rw - cgroup cgroup rw,pids\n",
			wantDir:     filepath.Join(v1, "kubepods/pod1/c1"),
			counterFile: "memory.oom_control", counter: "oom_kill_disable 0\nunder_oom 0\noom_kill %d\n",
			limitFile: "memory.limit_in_bytes", limit: "67108864\n", wantLimit: 64 << 20,
		},
		{
			name:        "v2 in a cgroup namespace",
			cgroup:      "0::/\n",
			mountinfo:   "40 30 0:27 /kubepods/pod2/c2 " + v2 + " ro,nosuid - cgroup2 cgroup2 rw\n",
			wantDir:     v2,
			v2:          true,
			counterFile: "memory.events", counter: "low 0\nhigh 0\nmax 3\noom 1\noom_kill %d\noom_group_kill 0\n",
			limitFile: "memory.max", limit: "max\n", wantLimit: 0,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cg, mi := filepath.Join(dir, c.name+".cgroup"), filepath.Join(dir, c.name+".mountinfo")
			writeFile(t, cg, c.cgroup)
			writeFile(t, mi, c.mountinfo)
			m := findMemCgroup(cg, mi)
			if m.dir != c.wantDir || m.v2 != c.v2 {
				t.Fatalf("found %+v, want dir %s v2 %v", m, c.wantDir, c.v2)
			}
			counter := newOOMCounter(m)
			if _, ok := counter.read(); ok {
				t.Fatal("a counter read from a missing file")
			}
			for _, n := range []int{0, 2} {
				writeFile(t, filepath.Join(m.dir, c.counterFile), fmtCounter(c.counter, n))
				// The counter file stays open: the second read sees the
				// rewritten file through the same descriptor.
				if got, ok := counter.read(); !ok || got != uint64(n) {
					t.Fatalf("oom_kill %d %v, want %d", got, ok, n)
				}
			}
			writeFile(t, filepath.Join(m.dir, c.limitFile), c.limit)
			if got := m.limit(); got != c.wantLimit {
				t.Fatalf("limit %d, want %d", got, c.wantLimit)
			}
		})
	}
	if m := findMemCgroup(filepath.Join(dir, "missing"), filepath.Join(dir, "missing")); m.dir != "" {
		t.Fatalf("found %+v without /proc files", m)
	}
}

func fmtCounter(format string, n int) string {
	return fmt.Sprintf(format, n)
}
