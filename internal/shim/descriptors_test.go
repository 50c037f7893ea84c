package shim_test

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-ci/tether/protocol"
)

// Scripts inherit stdin (/dev/null) and the output pipe on stdout and
// stderr, and nothing else of the shim's: not its stdin or stdout, not the
// replay store, not the memory cgroup's OOM-kill counter it keeps open
// after the first script. The script execs ls, which lists what it
// inherited (and its own descriptor of the listed directory).
func TestScriptsInheritNoShimDescriptor(t *testing.T) {
	dir := t.TempDir()
	s := script(t, dir, "fds.sh", "exec ls -l /proc/self/fd/\n")
	p := startShim(t, nil)
	from := 0
	for range 2 { // the second script starts with the counter file open
		p.send(run(s))
		_, i := p.waitRecord(from, 10*time.Second, func(r rec) bool { return r.Type == protocol.TypeStatus })
		from = i + 1
	}
	inherited := openWithoutCloexec(t)
	lines := strings.Split(strings.TrimSpace(string(p.output())), "\n")
	var outPipe string
	seen := 0
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 3 || f[len(f)-2] != "->" {
			continue // "total 0"
		}
		fd, target := f[len(f)-3], f[len(f)-1]
		switch {
		case fd == "0":
			seen++
			if target != "/dev/null" {
				t.Errorf("stdin is %s, want /dev/null", target)
			}
		case fd == "1":
			seen++
			outPipe = target
			if !strings.HasPrefix(target, "pipe:") {
				t.Errorf("stdout is %s, want the output pipe", target)
			}
		case fd == "2":
			if target != outPipe {
				t.Errorf("stderr is %s, want stdout's %s", target, outPipe)
			}
		case strings.HasPrefix(target, "/proc/"):
			// ls's own, of the directory it lists
		case inherited[fd] == target:
			// inherited by this test from its own parent: every child has it
		default:
			t.Errorf("script inherited fd %s → %s", fd, target)
		}
	}
	if seen != 4 {
		t.Fatalf("want stdin and stdout of 2 scripts, got:\n%s", p.output())
	}
}

// openWithoutCloexec returns the descriptors of this process that every
// child inherits (no close-on-exec flag: left open by whatever started the
// test), by number, with their targets.
func openWithoutCloexec(t *testing.T) map[string]string {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]string{}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
		if errno != 0 || flags&syscall.FD_CLOEXEC != 0 {
			continue
		}
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil {
			open[e.Name()] = target
		}
	}
	return open
}
