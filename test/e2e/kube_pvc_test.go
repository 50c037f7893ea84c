//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
)

// TestKubePVCPersistsBetweenJobs: a file one job writes into a
// PersistentVolumeClaim (--volume pvc:CLAIM:PATH) is there for the next
// job. The claim is bound to a hostPath PersistentVolume of the test's own
// (hostPathClaim).
func TestKubePVCPersistsBetweenJobs(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "pvc")
	const claim = "cache"
	dir := hostPathClaim(ctx, t, c, ns, claim)

	paths := writeScripts(t, []string{"write.sh", "read.sh"}, map[string]string{
		"write.sh": "echo 'written by job 1' > /cache/note && echo wrote\n",
		"read.sh":  "cat /cache/note\n",
	})
	base := []string{"run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns, "--volume", "pvc:" + claim + ":/cache"}
	res := runCLI(ctx, t, c, bin, append(base, paths[0])...)
	t.Logf("job 1 stderr:\n%s", res.stderr)
	if res.code != 0 || res.stdout != "wrote\n" {
		t.Fatalf("job 1: exit code %d stdout %q; want 0 and wrote", res.code, res.stdout)
	}
	if strings.Contains(res.stderr, "skipped=") {
		t.Fatalf("job 1 ran its only script, yet tether's summary lists skipped scripts")
	}
	res = runCLI(ctx, t, c, bin, append(base, paths[1])...)
	t.Logf("job 2 stderr:\n%s", res.stderr)
	if res.code != 0 || res.stdout != "written by job 1\n" {
		t.Fatalf("job 2: exit code %d stdout %q; want 0 and job 1's file", res.code, res.stdout)
	}
	// The file is in the volume's directory on the node, not in a
	// container's own filesystem.
	if b, err := os.ReadFile(filepath.Join(dir, "note")); err != nil || string(b) != "written by job 1\n" {
		t.Fatalf("the volume's directory holds %q (%v); want job 1's file", b, err)
	}
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}

// hostPathClaim makes the PersistentVolumeClaim claim in ns, bound to a
// hostPath PersistentVolume of the test's own (a unique name and storage
// class, pre-bound to the claim, a temporary directory on the node), which
// the test's cleanup deletes, and returns the node directory behind it.
func hostPathClaim(ctx context.Context, t *testing.T, c *Cluster, ns, claim string) string {
	t.Helper()
	dir := t.TempDir()
	class := "tether-e2e-" + rand.String(6)
	pvName := class + "-pv"
	size := resource.MustParse("16Mi")
	dirType := corev1.HostPathDirectory
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName, Labels: map[string]string{E2ELabel: "true"}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              class,
			ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: claim},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &dirType}},
		},
	}
	if _, err := c.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create PersistentVolume %s: %v", pvName, err)
	}
	// Runs before the namespace goes: the claim first (the volume stays
	// Bound, and so undeletable, while its claim exists), then the volume.
	t.Cleanup(func() { deletePV(t, c, ns, claim, pvName) })
	_, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			VolumeName:       pvName,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create PersistentVolumeClaim %s: %v", claim, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	c.WaitFor(wctx, t, "claim "+claim+" bound to "+pvName, func(ctx context.Context) (bool, error) {
		got, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.ClaimBound, err
	})
	return dir
}

// deletePV deletes claim in ns and then the PersistentVolume pvName, and
// waits until the volume is gone.
func deletePV(t testing.TB, c *Cluster, ns, claim, pvName string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := c.Client.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, claim, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete PersistentVolumeClaim %s/%s: %v", ns, claim, err)
	}
	if err := c.Client.CoreV1().PersistentVolumes().Delete(ctx, pvName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete PersistentVolume %s: %v", pvName, err)
		return
	}
	c.WaitFor(ctx, t, "PersistentVolume "+pvName+" deleted", func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}
