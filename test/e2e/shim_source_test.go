//go:build e2e

package e2e

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// --shim-from=image on the real node. Its API server (Kubernetes 1.34, the
// ImageVolume feature gate off by default) drops image volumes, and its
// containerd (1.6) has none: the pod must be created with the shim's init
// container instead, and the job run as usual. Where a server keeps image
// volumes, the pod must carry the image volume and no init container.
func TestKubeShimFromImage(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "shimfrom")

	// What this API server does with an image volume (a dry run).
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: BusyboxImage,
				VolumeMounts: []corev1.VolumeMount{{Name: "img", MountPath: "/img"}}}},
			Volumes: []corev1.Volume{{Name: "img", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: HelperImage}}}},
		},
	}
	dry, err := c.Client.CoreV1().Pods(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("dry run of a pod with an image volume: %v", err)
	}
	serverKeeps := len(dry.Spec.Volumes) > 0 && dry.Spec.Volumes[0].Image != nil

	paths := writeScripts(t, []string{"job.sh"}, map[string]string{"job.sh": "echo shim-ok; test -x /tether/bin/tether-shim && echo found\n"})
	res := runCLI(ctx, t, c, bin, "run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns,
		"--shim-from", "image", "--keep", paths[0])
	if res.code != 0 || res.stdout != "shim-ok\nfound\n" {
		t.Fatalf("exit %d, stdout %q; stderr:\n%s", res.code, res.stdout, res.stderr)
	}
	list, err := c.Client.CoreV1().Pods(ns).List(ctx, tetherSelector())
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list the job's pod: %v (%d pods)", err, len(list.Items))
	}
	pod := list.Items[0]
	hasInit := len(pod.Spec.InitContainers) > 0 && pod.Spec.InitContainers[0].Name == "tether-init"
	var hasImage bool
	for _, v := range pod.Spec.Volumes {
		hasImage = hasImage || v.Image != nil
	}
	said := strings.Contains(res.stderr, "drops image volumes")
	if serverKeeps {
		if hasInit || !hasImage || said {
			t.Fatalf("a server that keeps image volumes: init container %v, image volume %v, fallback logged %v; want the image volume only", hasInit, hasImage, said)
		}
		return
	}
	if !hasInit || hasImage || !said {
		t.Fatalf("a server that drops image volumes: init container %v, image volume %v, fallback logged %v; want the init container, and the fallback said on stderr:\n%s", hasInit, hasImage, said, res.stderr)
	}
}
