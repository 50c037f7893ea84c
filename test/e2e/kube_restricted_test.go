//go:build e2e

package e2e

// Tether jobs in a namespace that enforces the Pod Security Standard
// "restricted" (kube.Spec.Restricted, `tether run --restricted`): the real
// PodSecurity admission plugin of kube-apiserver judges the pods.

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
)

// restrictedNamespace creates a namespace where the PodSecurity admission
// enforces the "restricted" profile.
func restrictedNamespace(t *testing.T, c *Cluster) string {
	t.Helper()
	return c.NewNamespace(t, "restricted", map[string]string{
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest",
	})
}

// probeScript prints the user ID, whether the root filesystem is
// read-only (EROFS, not merely EACCES for a non-root user), whether /tmp is
// writable, and the shim's spool directory.
const probeScript = `echo "uid=$(id -u)"
case "$(touch /tether-probe 2>&1)" in
*"Read-only file system"*) echo "root read-only" ;;
*) echo "root NOT read-only: $(touch /tether-probe 2>&1; echo " rc=$?")" ;;
esac
echo tmpdata >/tmp/probe && cat /tmp/probe
ls /tether/spool
`

// TestKubeRestrictedNamespace: in a namespace enforcing "restricted" a
// plain job is rejected by admission (so enforcement is live), and a job
// with Spec.Restricted runs as user 65532 with a read-only root and a
// writable /tmp, its output byte-exact across a cut connection (resumed
// from the shim's spool), its exit code right.
func TestKubeRestrictedNamespace(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := restrictedNamespace(t, c)

	t.Run("plain job rejected", func(t *testing.T) {
		objs, err := kube.Build(kubeSpec(ns, BusyboxImage, "echo hi\n"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = kube.Create(ctx, clientset.Wrap(c.Client), objs, kubeLogger(t))
		if err == nil {
			t.Fatal("a pod without Restricted was admitted into a namespace enforcing restricted: enforcement is not live")
		}
		t.Logf("rejected as expected: %v", err)
		msg := err.Error()
		// The build container breaks the profile; the init container does
		// not (the message names only "build" for these checks).
		for _, want := range []string{
			`violates PodSecurity "restricted:latest"`,
			`container "build" must set securityContext.allowPrivilegeEscalation=false`,
			`container "build" must set securityContext.capabilities.drop=["ALL"]`,
			"--restricted",
		} {
			if !strings.Contains(msg, want) {
				t.Errorf("the rejection lacks %q: %s", want, msg)
			}
		}
		if pods, cms, secrets := tetherObjects(ctx, t, c, ns); pods+cms+secrets != 0 {
			t.Errorf("%d pods, %d ConfigMaps, %d Secrets left after the rejection", pods, cms, secrets)
		}
	})

	t.Run("restricted job", func(t *testing.T) {
		steady, steadyOut := steadyScript(200, "0.05", 5)
		spec := kubeSpec(ns, BusyboxImage, probeScript, steady, "echo never runs\n")
		spec.After = []kube.Script{{Name: "after.sh", Content: []byte("echo \"after as $(id -u)\"\n")}}
		spec.Restricted = true
		pod, objs := startPod(ctx, t, c, spec)

		proxy, tr := proxiedTransport(t, c, pod, kube.TransportOptions{Logger: kubeLogger(t)})

		out := &safeBuffer{}
		// Once the steady script prints, cut every connection through the
		// proxy until 3 cuts hit an open one.
		cutsDone := cutRepeatedly(ctx, proxy, func() bool { return bytes.Contains(out.Bytes(), []byte("line 5 ")) }, 3, 500*time.Millisecond)
		res, err := client.Run(ctx, tr, objs.Job, client.Options{
			Output: out, Logger: kubeLogger(t), ExitShim: true,
			ReconnectMin: 50 * time.Millisecond, ReconnectMax: time.Second,
		})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		var hits int
		select {
		case hits = <-cutsDone:
		case <-time.After(30 * time.Second):
			t.Fatal("the cutter did not finish")
		}
		want := fmt.Sprintf("uid=%d\nroot read-only\ntmpdata\nrecords\n", kube.RestrictedUID) + steadyOut +
			fmt.Sprintf("after as %d\n", kube.RestrictedUID)
		if got := string(out.Bytes()); got != want {
			t.Fatalf("output after %d cuts differs (%d bytes, want %d): %s", hits, len(got), len(want), firstDifference(got, want))
		}
		if res.ExitCode != 5 {
			t.Fatalf("exit code %d, want 5 (the steady script's)", res.ExitCode)
		}
		if hits < 1 || res.Reconnects < 1 {
			t.Fatalf("%d cuts, %d reconnects: the job ended before a cut hit the attach", hits, res.Reconnects)
		}
		t.Logf("%d cuts, %d reconnects, %d bytes exact", hits, res.Reconnects, len(want))
	})

	t.Run("tether run flags", func(t *testing.T) {
		bin := buildTether(t)
		paths := writeScripts(t, []string{"job.sh"}, map[string]string{"job.sh": probeScript + "exit 4\n"})
		res := runCLI(ctx, t, c, bin, "run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns,
			"--restricted", "--run-as-user", "1234", paths[0])
		t.Logf("stderr:\n%s", res.stderr)
		if want := "uid=1234\nroot read-only\ntmpdata\nrecords\n"; res.stdout != want || res.code != 4 {
			t.Fatalf("--restricted --run-as-user 1234: exit %d, stdout %q; want 4 and %q", res.code, res.stdout, want)
		}
		plain := runCLI(ctx, t, c, bin, "run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns, paths[0])
		if plain.code == 0 || plain.stdout != "" || !strings.Contains(plain.stderr, "violates PodSecurity") || !strings.Contains(plain.stderr, "--restricted") {
			t.Fatalf("tether run without --restricted: exit %d, stdout %q, stderr:\n%s\nwant a rejection that suggests --restricted", plain.code, plain.stdout, plain.stderr)
		}
		waitNoTetherObjects(ctx, t, c, ns, 90*time.Second)
	})
}

// firstDifference describes where got first differs from want, with up to
// 120 bytes of each from a little before that point.
func firstDifference(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-40)
	return fmt.Sprintf("at byte %d:\n got %q\nwant %q", i, got[from:min(len(got), from+120)], want[from:min(len(want), from+120)])
}
