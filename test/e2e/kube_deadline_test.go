//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestKubeTimeoutStillRunsAfterScripts: `tether run --timeout` stops the
// main script in its pod, the after-script still runs there and its output
// arrives, tether exits 124 (deadline), and the pod and its objects are
// gone afterwards.
func TestKubeTimeoutStillRunsAfterScripts(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "deadline")
	paths := writeScripts(t, []string{"slow.sh", "after.sh"}, map[string]string{
		"slow.sh":  "echo started\nsleep 300\necho never\n",
		"after.sh": "echo after-ran\n",
	})
	res := runCLI(ctx, t, c, bin, "run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns,
		"--timeout", "5s", paths[0], "--after", paths[1])
	t.Logf("stderr:\n%s", res.stderr)
	if res.code != 124 {
		t.Fatalf("exit code %d, want 124 (deadline)", res.code)
	}
	if res.stdout != "started\nafter-ran\n" {
		t.Fatalf("stdout %q, want the main script's start and the after-script's output", res.stdout)
	}
	if !strings.Contains(res.stderr, "deadline") {
		t.Fatalf("stderr does not say the deadline ended the job")
	}
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}
