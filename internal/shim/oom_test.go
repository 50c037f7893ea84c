package shim_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tether-ci/tether/protocol"
)

// memoryCgroup creates a memory cgroup limited to limit bytes (v1 or v2,
// whichever the machine has) and returns its cgroup.procs file; the
// cgroup is removed when the test ends.
func memoryCgroup(t *testing.T, limit int64) string {
	t.Helper()
	name := fmt.Sprintf("tether-oom-test-%d", os.Getpid())
	var dir string
	files := map[string]string{}
	switch {
	case exists("/sys/fs/cgroup/memory/memory.limit_in_bytes"):
		dir = filepath.Join("/sys/fs/cgroup/memory", name)
		files["memory.limit_in_bytes"] = fmt.Sprint(limit)
		files["memory.memsw.limit_in_bytes"] = fmt.Sprint(limit) // only where swap accounting exists
	case exists("/sys/fs/cgroup/cgroup.controllers"):
		if err := os.WriteFile("/sys/fs/cgroup/cgroup.subtree_control", []byte("+memory"), 0o644); err != nil {
			t.Fatalf("enable the memory controller for child cgroups: %v", err)
		}
		dir = filepath.Join("/sys/fs/cgroup", name)
		files["memory.max"] = fmt.Sprint(limit)
		files["memory.swap.max"] = "0"
	default:
		t.Fatal("no memory cgroup controller mounted under /sys/fs/cgroup")
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("create a memory cgroup: %v", err)
	}
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := os.Remove(dir)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("remove the test cgroup %s: %v", dir, err)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	for _, f := range []string{"memory.limit_in_bytes", "memory.max", "memory.memsw.limit_in_bytes", "memory.swap.max"} {
		v, ok := files[f]
		if !ok || !exists(filepath.Join(dir, f)) {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644); err != nil {
			t.Fatalf("set %s: %v", f, err)
		}
	}
	return filepath.Join(dir, "cgroup.procs")
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// A script whose command the kernel kills for memory gets a status record
// that says so, with the cgroup's limit; an ordinary SIGKILL does not.
func TestOutOfMemoryKillIsReported(t *testing.T) {
	requireRoot(t)
	procs := memoryCgroup(t, 64<<20)
	dir := t.TempDir()
	hog := script(t, dir, "hog.sh", "head -c 200m /dev/zero | tail\n")
	killed := script(t, dir, "killed.sh", "kill -KILL $$\n")
	inCgroup := func(c *exec.Cmd) {
		// The shim joins the cgroup ("0" is the writing process itself)
		// before it becomes the shim.
		c.Args = append([]string{"/bin/sh", "-c", `echo 0 > "$0" && exec "$@"`, procs, c.Path}, c.Args[1:]...)
		c.Path = "/bin/sh"
	}
	p := startShim(t, nil, inCgroup)
	p.send(run(hog))
	st := p.waitStatus(hog, 60*time.Second)
	if st.CommandExitCode != 137 || !st.OOMKilled || st.MemoryLimit != 64<<20 {
		t.Fatalf("status %+v, want 137 with oom_killed and memory_limit %d", st, 64<<20)
	}
	p.send(run(killed))
	if st := p.waitStatus(killed, 30*time.Second); st.CommandExitCode != 137 || st.OOMKilled || st.MemoryLimit != 0 {
		t.Fatalf("plain SIGKILL: status %+v, want 137 without oom_killed", st)
	}
	p.send(protocol.Command{Cmd: protocol.CmdExit})
	p.waitExit(30 * time.Second)
}
