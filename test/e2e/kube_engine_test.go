//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestKubeTTYAndShebang: `tether run --tty` gives the scripts in the pod a
// terminal, a script's "#!" line picks its interpreter there, and a shebang
// naming a missing interpreter fails with 127 naming it.
func TestKubeTTYAndShebang(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "engine")
	paths := writeScripts(t, []string{"tty.sh", "awk.sh", "missing.sh"}, map[string]string{
		"tty.sh":     "if [ -t 1 ]; then echo tty; else echo notty; fi\n",
		"awk.sh":     "#!/usr/bin/awk -f\nBEGIN { print \"awk ran\" }\n",
		"missing.sh": "#!/no/such/interpreter\necho never\n",
	})
	res := runCLI(ctx, t, c, bin, "run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns,
		"--tty", paths[0], paths[1])
	t.Logf("stderr:\n%s", res.stderr)
	if out := strings.ReplaceAll(res.stdout, "\r", ""); res.code != 0 || out != "tty\nawk ran\n" {
		t.Fatalf("exit code %d stdout %q, want 0 and tty, awk ran", res.code, res.stdout)
	}
	res = runCLI(ctx, t, c, bin, "run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns, paths[2])
	if res.code != 127 || !strings.Contains(res.stderr, "/no/such/interpreter") {
		t.Fatalf("missing interpreter: exit code %d stderr %s, want 127 naming it", res.code, res.stderr)
	}
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}

// TestKubeShellFlag: `tether run --shell PATH` runs every script of a pod's
// job with that shell, whatever its "#!" line, and a shell the image lacks
// fails the job with 127 naming it instead of running another shell.
func TestKubeShellFlag(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "shell")
	paths := writeScripts(t, []string{"shebang.sh"}, map[string]string{
		"shebang.sh": "#!/no/such/interpreter\necho \"ran by $(readlink /proc/$$/exe)\"\n",
	})
	res := runCLI(ctx, t, c, bin, "run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns,
		"--shell", "/bin/sh", paths[0])
	if res.code != 0 || res.stdout != "ran by /bin/busybox\n" {
		t.Fatalf("--shell /bin/sh: exit code %d stdout %q stderr:\n%s\nwant 0 and the script run by busybox sh", res.code, res.stdout, res.stderr)
	}
	res = runCLI(ctx, t, c, bin, "run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns,
		"--shell", "/bin/bash", paths[0])
	if res.code != 127 || res.stdout != "" || !strings.Contains(res.stderr, "/bin/bash does not exist") {
		t.Fatalf("--shell /bin/bash in an image without bash: exit code %d stdout %q stderr:\n%s\nwant 127 naming /bin/bash, no output", res.code, res.stdout, res.stderr)
	}
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}
