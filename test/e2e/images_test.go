//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/internal/ociimage"
)

// The suite's jobs get their shim from the project's release-built image:
// the linux/amd64 + linux/arm64 index in bin/images/tether-shim.tar, which
// scripts/build-images.sh writes the way `make release` does and the node
// imported with both platforms' content. The init container's image is this platform's image of that
// index, and the shim it copied runs the build container.
func TestShimImageIsTheReleaseArchive(t *testing.T) {
	f, err := os.Open(filepath.Join(repoRoot(t), "bin", "images", "tether-shim.tar"))
	if err != nil {
		t.Fatalf("the shim image archive (scripts/build-images.sh writes it): %v", err)
	}
	a, err := ociimage.ReadArchive(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, images, err := a.Images(HelperImage)
	if err != nil {
		t.Fatal(err)
	}
	var platforms, blobs []string
	var config string // the image ID the node gives this platform's image
	for _, img := range images {
		platforms = append(platforms, img.Platform.String())
		blobs = append(blobs, img.Manifest.Digest)
		for _, l := range img.Layers {
			blobs = append(blobs, l.Digest)
		}
		if img.Platform.Architecture == runtime.GOARCH {
			m, err := a.Manifest(img.Manifest)
			if err != nil {
				t.Fatal(err)
			}
			config = m.Config.Digest
		}
		if _, ok := img.Files["/tether-shim"]; !ok || len(img.Files) != 1 {
			t.Errorf("%s %s holds %d files, want only /tether-shim", HelperImage, img.Platform, len(img.Files))
		}
	}
	if strings.Join(platforms, " ") != "linux/amd64 linux/arm64" {
		t.Errorf("%s has platforms %v, want linux/amd64 and linux/arm64", HelperImage, platforms)
	}

	// The node's containerd holds every platform's manifest and layer (the
	// suite imports with --all-platforms), not just this machine's.
	dir := os.Getenv("TETHER_E2E_DIR")
	if dir == "" {
		dir = "/var/tmp/tether-e2e"
	}
	content, err := exec.Command("ctr", "--address", filepath.Join(dir, "containerd", "containerd.sock"),
		"--namespace", "k8s.io", "content", "ls", "-q").CombinedOutput()
	if err != nil {
		t.Fatalf("ctr content ls on the node's containerd: %v\n%s", err, content)
	}
	for _, d := range blobs {
		if !strings.Contains(string(content), d) {
			t.Errorf("the node's containerd lacks blob %s of %s", d, HelperImage)
		}
	}

	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "images")
	pod := c.CreatePod(ctx, t, ShimPod(ns, "shim", BusyboxImage))
	c.WaitPodRunning(ctx, t, ns, pod.Name)
	got, err := c.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.InitContainerStatuses) != 1 {
		t.Fatalf("init container statuses %+v", got.Status.InitContainerStatuses)
	}
	// The runtime names an image by its configuration's digest (identical
	// content imported under other tags, e.g. another checkout's, shares it).
	st := got.Status.InitContainerStatuses[0]
	if config == "" || !strings.HasSuffix(st.ImageID, config) {
		t.Errorf("the init container ran image %q (ID %s), want the archive's linux/%s image (configuration %s)", st.Image, st.ImageID, runtime.GOARCH, config)
	}
	if st.State.Terminated == nil || st.State.Terminated.ExitCode != 0 {
		t.Errorf("the init container (tether-shim copy) did not succeed: %+v", st.State)
	}
}
