//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKubeOOMReported: a job run with --memory 64Mi whose script holds far
// more is killed by the kernel's OOM killer; tether exits 137 and says the
// script was killed for memory (with the limit), and the after-script still
// runs in the same pod; nothing is left behind.
func TestKubeOOMReported(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "oom")
	paths := writeScripts(t, []string{"hog.sh", "after.sh"}, map[string]string{
		"hog.sh":   "head -c 400m /dev/zero | tail\n",
		"after.sh": "echo after ran\n",
	})
	res := runCLI(ctx, t, c, bin, "run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns,
		"--memory", "64Mi", paths[0], "--after", paths[1])
	t.Logf("stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
	if res.code != 137 {
		t.Fatalf("exit code %d; want 137", res.code)
	}
	if !strings.Contains(res.stderr, "out of memory (limit 64Mi)") {
		t.Errorf("stderr lacks %q", "out of memory (limit 64Mi)")
	}
	if !strings.HasSuffix(res.stdout, "after ran\n") {
		t.Errorf("stdout %q; want the after-script's line last", res.stdout)
	}
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}

// TestKubeGCDeletesEndedPods: pods of jobs run with --keep end (Succeeded
// and Failed) and stay; tether gc --grace 0s deletes them, their
// ConfigMaps and Secrets, and leaves no Tether object behind.
func TestKubeGCDeletesEndedPods(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gcended")
	paths := writeScripts(t, []string{"ok.sh", "fail.sh"}, map[string]string{"ok.sh": "echo ok\n", "fail.sh": "exit 4\n"})
	for _, tc := range []struct {
		script string
		code   int
	}{{paths[0], 0}, {paths[1], 4}} {
		res := runCLI(ctx, t, c, bin, "run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns,
			"--keep", "--env", "TOKEN=kept-secret", tc.script)
		if res.code != tc.code {
			t.Fatalf("run %s: exit code %d, want %d; stderr:\n%s", tc.script, res.code, tc.code, res.stderr)
		}
	}
	if p, cm, s := tetherObjects(ctx, t, c, ns); p != 2 || cm+s == 0 {
		t.Fatalf("after two --keep runs: %d pods, %d ConfigMaps, %d Secrets; want 2 pods and their objects", p, cm, s)
	}
	// Wait for both pods to have ended (the shim exits after its job).
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	c.WaitFor(wctx, t, "both kept pods ended", func(ctx context.Context) (bool, error) {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "status.phase!=Succeeded,status.phase!=Failed"})
		if err != nil {
			return false, err
		}
		return len(pods.Items) == 0, nil
	})
	cmd := exec.CommandContext(ctx, bin, "gc", "-n", ns, "--grace", "0s")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	out, err := cmd.CombinedOutput()
	t.Logf("tether gc:\n%s", out)
	if err != nil {
		t.Fatalf("tether gc: %v", err)
	}
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}
