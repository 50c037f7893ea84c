//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
)

// TestKubeQuotaNeedsResources: a namespace whose ResourceQuota covers cpu
// and memory rejects a job without requests and limits (a clear message,
// nothing left behind) and accepts it with --cpu and --memory.
func TestKubeQuotaNeedsResources(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "resquota")
	createQuota(ctx, t, c, ns, corev1.ResourceList{
		corev1.ResourceRequestsCPU: resource.MustParse("2"), corev1.ResourceRequestsMemory: resource.MustParse("1Gi"),
		corev1.ResourceLimitsCPU: resource.MustParse("2"), corev1.ResourceLimitsMemory: resource.MustParse("1Gi"),
	})
	paths := writeScripts(t, []string{"job.sh"}, map[string]string{"job.sh": "echo hi\n"})
	base := []string{"run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns, "--env", "SECRET=x"}
	res := runCLI(ctx, t, c, bin, append(base, paths[0])...)
	t.Logf("without resources, stderr:\n%s", res.stderr)
	if res.code != 125 || !strings.Contains(res.stderr, "must specify") {
		t.Fatalf("exit code %d; want 125 and the quota's reason", res.code)
	}
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
	res = runCLI(ctx, t, c, bin, append(base, "--cpu", "100m", "--memory", "64Mi", paths[0])...)
	t.Logf("with resources, stderr:\n%s", res.stderr)
	if res.code != 0 || res.stdout != "hi\n" {
		t.Fatalf("exit code %d stdout %q; want 0 and hi", res.code, res.stdout)
	}
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}

// TestKubeServiceSidecar: a service (busybox httpd) runs beside the build
// container; the script reaches it under its alias; the job's exit code is
// the script's; and once the shim exits the service does not keep the pod
// alive.
func TestKubeServiceSidecar(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "service")
	spec := kubeSpec(ns, BusyboxImage, `for i in $(seq 50); do
  if wget -q -O - http://web:18080/passwd > /tmp/page; then head -n 1 /tmp/page; exit 3; fi
  sleep 0.2
done
echo "service never answered"; exit 1
`)
	spec.Services = []kube.Service{{
		Image:   BusyboxImage,
		Aliases: []string{"web"},
		Command: []string{"/bin/busybox", "httpd", "-f", "-p", "18080", "-h", "/etc"},
	}}
	spec.TerminationGracePeriod = 2 * time.Second
	pod, objs := startPod(ctx, t, c, spec)
	out := &safeBuffer{}
	res, err := client.Run(ctx, pod.Transport(c.Config, kube.TransportOptions{Logger: kubeLogger(t)}), objs.Job,
		client.Options{Output: out, Logger: kubeLogger(t), ExitShim: true})
	if err != nil {
		t.Fatalf("Run: %v (output %q)", err, out.Bytes())
	}
	if res.ExitCode != 3 || !strings.HasPrefix(string(out.Bytes()), "root:") {
		t.Fatalf("exit code %d output %q; want 3 and the first line of /etc/passwd served by the service", res.ExitCode, out.Bytes())
	}
	got := c.WaitPodPhase(ctx, t, ns, pod.Name, corev1.PodFailed, 90*time.Second)
	for _, st := range got.Status.ContainerStatuses {
		if st.Name == kube.BuildContainer && (st.State.Terminated == nil || st.State.Terminated.ExitCode != 3) {
			t.Fatalf("build container state %+v; want terminated with 3", st.State)
		}
	}
}
