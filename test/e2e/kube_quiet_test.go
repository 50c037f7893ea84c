//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestKubeQuietOOMSaysWhy: `tether run --quiet` hides progress, never the
// line that says why the job failed: a script the OOM killer ended (exit
// 137, nothing printed by the script about it) still gets one error line
// naming the memory limit, and nothing else is logged.
func TestKubeQuietOOMSaysWhy(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "quiet-oom")
	paths := writeScripts(t, []string{"hog.sh"}, map[string]string{
		"hog.sh": "head -c 400m /dev/zero | tail\n",
	})
	res := runCLI(ctx, t, c, bin, "run", "-q", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns,
		"--memory", "64Mi", paths[0])
	t.Logf("stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
	if res.code != 137 {
		t.Fatalf("exit code %d; want 137", res.code)
	}
	lines := strings.Split(strings.TrimSuffix(res.stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], `level=ERROR msg="job failed" exit_code=137`) ||
		!strings.Contains(lines[0], `killed="out of memory (limit 64Mi)"`) {
		t.Fatalf("stderr %q; want the one line saying the script was killed for memory", res.stderr)
	}
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}
