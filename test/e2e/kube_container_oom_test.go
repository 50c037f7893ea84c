//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestKubeContainerOOMKilled: when the kernel's OOM killer ends the shim
// itself, the whole build container ends with status reason OOMKilled and
// no job result exists; tether says so (killed: out of memory, with the
// limit, and the container's reason) and exits 137 instead of reporting a
// lost connection with an unknown outcome; nothing is left behind.
//
// How the container really gets OOMKilled: the job fills a memory-backed
// emptyDir, memory that killing a process does not give back, so the OOM
// killer must go on until it hits something that ends the pressure. Which
// process it picks first depends on resident sizes that are close (the
// shim's and busybox's are about a megabyte each), so the script makes the
// choice certain the way the kernel itself ranks processes: it raises the
// shim's oom_score_adj to 1000 (raising needs no privilege) while the
// Guaranteed pod's own processes stay at the runtime's low score. The kill
// is the kernel's, in the container's memory cgroup; the container runtime
// reports it.
func TestKubeContainerOOMKilled(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "ctroom")
	paths := writeScripts(t, []string{"fill.sh", "after.sh"}, map[string]string{
		"fill.sh": "echo 1000 > /proc/1/oom_score_adj || exit 90\n" +
			"dd if=/dev/zero of=/scratch/fill bs=64k count=4000 2>/dev/null\n" +
			"echo the shim survived\n",
		"after.sh": "echo after ran\n",
	})
	res := runCLI(ctx, t, c, bin, "run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns,
		"--cpu", "100m", "--memory", "64Mi", "--volume", "emptydir-memory:/scratch", paths[0], "--after", paths[1])
	t.Logf("stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
	if res.code != 137 {
		t.Fatalf("exit code %d; want 137", res.code)
	}
	for _, want := range []string{"its container was OOMKilled", `killed="out of memory (limit 64Mi)"`, "exit code 137, OOMKilled"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	if strings.Contains(res.stdout, "survived") || strings.Contains(res.stdout, "after ran") {
		t.Errorf("stdout %q: the shim lived on after the fill (the container was not what the OOM killer ended)", res.stdout)
	}
	// The termination message (the tail of the container's log) is the
	// shim's records; none of them belongs in the error.
	if strings.Contains(res.stderr, `{\"protocol\"`) {
		t.Errorf("stderr repeats the shim's records from the termination message")
	}
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}

// TestKubeScriptOOMThenShimCrash: a script OOM-killed earlier in the job
// leaves the container runtime's reason OOMKilled on the build container,
// and the runtime keeps it when the shim later dies for another reason
// (here a crash: SIGABRT, which the shim does not handle). The container's
// own end decides: its exit code is not SIGKILL's, so tether reports the
// script's OOM kill in the script's status, never "its container was
// OOMKilled", and the job's outcome as unknown (125), naming the
// interrupted after-script.
func TestKubeScriptOOMThenShimCrash(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "oomcrash")
	paths := writeScripts(t, []string{"hog.sh", "crash.sh"}, map[string]string{
		// dd's 100 MB block is its own memory: the OOM killer ends dd, the
		// largest process, and the shim lives on.
		"hog.sh":   "dd if=/dev/zero of=/dev/null bs=100000000 count=1\n",
		"crash.sh": "kill -ABRT 1\nsleep 30\necho not-reached\n",
	})
	res := runCLI(ctx, t, c, bin, "run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns,
		"--cpu", "100m", "--memory", "64Mi", paths[0], "--after", paths[1])
	t.Logf("stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
	if !strings.Contains(res.stderr, `killed="out of memory (limit 64Mi)"`) || !strings.Contains(res.stderr, "01-crash.sh phase=after") {
		t.Fatalf("the script was not OOM-killed before the after-script ran: the test's premise failed")
	}
	if res.code != 125 {
		t.Errorf("exit code %d; want 125 (the shim crashed: the job's outcome is unknown)", res.code)
	}
	for _, bad := range []string{"its container was OOMKilled", "not-reached"} {
		if strings.Contains(res.stderr+res.stdout, bad) {
			t.Errorf("output says %q", bad)
		}
	}
	for _, want := range []string{"from an earlier OOM kill of a process in it", "interrupted=["} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}
