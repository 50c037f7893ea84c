//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKubePodPatch: --pod-patch adds a label and a variable the script
// sees (the label checked on the kept pod); a patch replacing the build
// container's command is refused naming the field, before anything is
// created.
func TestKubePodPatch(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "podpatch")
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(good, []byte(`metadata:
  labels: {patched: "yes"}
spec:
  containers:
  - name: build
    env: [{name: FROM_PATCH, value: hello-from-patch}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`[{"op":"replace","path":"/spec/containers/0/command","value":["sleep","3600"]}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	paths := writeScripts(t, []string{"job.sh"}, map[string]string{"job.sh": "echo \"$FROM_PATCH\"\n"})
	base := []string{"run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns}

	res := runCLI(ctx, t, c, bin, append(base, "--keep", "--pod-patch", good, paths[0])...)
	t.Logf("stderr:\n%s", res.stderr)
	if res.code != 0 || res.stdout != "hello-from-patch\n" {
		t.Fatalf("exit code %d stdout %q; want 0 and the patched variable", res.code, res.stdout)
	}
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, tetherSelector())
	if err != nil || len(pods.Items) != 1 || pods.Items[0].Labels["patched"] != "yes" {
		t.Fatalf("kept pods %v (err %v); want one labelled patched=yes", len(pods.Items), err)
	}
	if err := c.Client.CoreV1().Pods(ns).Delete(ctx, pods.Items[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)

	res = runCLI(ctx, t, c, bin, append(base, "--pod-patch", bad, "--pod-patch-type", "json", paths[0])...)
	t.Logf("refused patch, stderr:\n%s", res.stderr)
	want := "pod patch changes spec.containers[build].command: the build container must run tether-shim"
	if res.code != 2 || !strings.Contains(res.stderr, want) {
		t.Fatalf("exit code %d; want 2 and %q", res.code, want)
	}
	if p, cm, s := tetherObjects(ctx, t, c, ns); p+cm+s != 0 {
		t.Fatalf("a refused patch left %d pods, %d ConfigMaps, %d Secrets", p, cm, s)
	}
}
