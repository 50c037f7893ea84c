//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KubectlEnv names the variable holding the kubectl that matches the node
// (scripts/e2e.sh sets it to the cached Kubernetes build's).
const KubectlEnv = "TETHER_E2E_KUBECTL"

// The plain manifests as users apply them, `kubectl apply -k` of an overlay
// on deploy/namespaced: the kustomization's image entry retags the CronJob's
// CLI image, and the cleaner it runs in-cluster deletes the expired pod and
// the unowned ConfigMap of its namespace, nothing else.
func TestGCPlainManifestsWithKustomize(t *testing.T) {
	kubectl := os.Getenv(KubectlEnv)
	if kubectl == "" {
		t.Fatalf("%s is not set: run the suite with `make e2e` (or set it to the kubectl of the node's Kubernetes build)", KubectlEnv)
	}
	c := NewCluster(t)
	ctx := context.Background()
	ns := c.NewNamespace(t, "gc-kustomize")
	u, err := url.Parse(c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		t.Fatalf("apiserver address %q: %v", c.Config.Host, err)
	}
	// The overlay a user would write for this node: the suite's image tag,
	// and (no kube-proxy here) the apiserver on the host's loopback.
	spec := "/spec/jobTemplate/spec/template/spec"
	overlay := t.TempDir()
	// kustomize takes a base by relative path only.
	base, err := filepath.Rel(overlay, filepath.Join(repoRoot(t), "deploy", "namespaced"))
	if err != nil {
		t.Fatal(err)
	}
	kustomization := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: %s
resources:
  - %s
images:
  - name: ghcr.io/tether-ci/tether
    newTag: %q
patches:
  - target: {kind: CronJob, name: tether-gc}
    patch: |-
      - {op: add, path: /spec/suspend, value: true}
      - {op: add, path: %[4]s/hostNetwork, value: true}
      - {op: add, path: %[4]s/dnsPolicy, value: Default}
      - {op: replace, path: %[4]s/containers/0/imagePullPolicy, value: Never}
      - {op: replace, path: %[4]s/containers/0/args, value: ["--grace=1s", "--log-format=json"]}
      - op: add
        path: %[4]s/containers/0/env
        value: [{name: KUBERNETES_SERVICE_HOST, value: %[5]q}, {name: KUBERNETES_SERVICE_PORT, value: %[6]q}]
`, ns, base, imageTag(), spec, host, port)
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", c.Kubeconfig, "apply", "-k", overlay).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply -k: %v\n%s", err, out)
	}
	cj, err := c.Client.BatchV1().CronJobs(ns).Get(ctx, "tether-gc", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the CronJob of deploy/namespaced: %v", err)
	}
	if img := cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image; img != CLIImage {
		t.Fatalf("the kustomized CronJob runs %q, want %q", img, CLIImage)
	}

	expired := c.CreatePod(ctx, t, gcPod(ns, "job-expired", gcStr("1")))
	c.CreatePod(ctx, t, gcPod(ns, "job-young", gcStr("3600")))
	c.CreatePod(ctx, t, gcPod(ns, "not-tether", nil))
	unowned := c.gcCreateConfigMap(ctx, t, ns, "leaked-scripts", gcLabels("j"), nil)
	gcWaitPast([]metav1.Time{expired.CreationTimestamp, unowned.CreationTimestamp}, time.Second)

	ok, log := c.gcRunCronJobNow(ctx, t, cj)
	if !ok {
		t.Fatalf("the gc Job failed; log:\n%s", log)
	}
	deleted := gcDeletedInLog(t, log)
	if want := []string{"configmap " + ns + "/leaked-scripts", "pod " + ns + "/job-expired"}; !slices.Equal(deleted, want) {
		t.Errorf("the CronJob's run deleted %v, want %v; log:\n%s", deleted, want, log)
	}
}
