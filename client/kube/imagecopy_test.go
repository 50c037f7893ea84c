package kube

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// runImageCopy runs the copy script as the init container does, with
// PATH limited to dirs.
func runImageCopy(t *testing.T, src, dst, path string, optional ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{"-c", imageCopyScript, "sh", src, dst, "img:1"}, optional...)...)
	cmd.Env = []string{"PATH=" + path}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// The copy script copies a tree with its modes and checks it, with diff
// and (where the image has none) with find and wc; a missing directory
// fails with the image and the directory named.
func TestImageCopyScript(t *testing.T) {
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "node20", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "node20", "bin", "node"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "readme"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	noDiff := t.TempDir()
	for _, tool := range []string{"cp", "find", "wc", "sort", "echo"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(noDiff, tool)); err != nil {
			t.Fatal(err)
		}
	}
	for name, path := range map[string]string{"diff": os.Getenv("PATH"), "no diff": noDiff} {
		dst := t.TempDir()
		out, err := runImageCopy(t, src, dst, path)
		if err != nil {
			t.Fatalf("%s: %v: %s", name, err, out)
		}
		fi, err := os.Stat(filepath.Join(dst, "node20", "bin", "node"))
		if err != nil || fi.Mode().Perm()&0o111 == 0 {
			t.Errorf("%s: copied node: %v, %v", name, fi, err)
		}
	}
	out, err := runImageCopy(t, filepath.Join(src, "gone"), t.TempDir(), os.Getenv("PATH"))
	if err == nil || !strings.Contains(out, "copying "+filepath.Join(src, "gone")+" out of image img:1") {
		t.Errorf("missing dir: %v: %s", err, out)
	}
	// Optional: a missing directory copies nothing and succeeds.
	empty := t.TempDir()
	if out, err := runImageCopy(t, filepath.Join(src, "gone"), empty, os.Getenv("PATH"), "optional"); err != nil || !strings.Contains(out, "nothing copied") {
		t.Errorf("optional missing dir: %v: %s", err, out)
	}
	// A copy that cannot be written (the destination is a file) fails.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runImageCopy(t, src, file, os.Getenv("PATH")); err == nil || !strings.Contains(out, "cp failed") {
		t.Errorf("unwritable destination: %v: %s", err, out)
	}
}

// ImageCopies become init containers after the shim's, under the
// restricted profile; bad ones are refused.
func TestImageCopiesBuild(t *testing.T) {
	vol := corev1.Volume{Name: "ext", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	spec := Spec{Namespace: "n", Image: "job", Serve: true, Restricted: true, Volumes: []corev1.Volume{vol},
		ImageCopies: []ImageCopy{{Name: "externals", Image: "runner:1", Dir: "/home/runner/externals", Volume: "ext"}}}
	objs, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	inits := objs.Pod.Spec.InitContainers
	if len(inits) != 2 || inits[1].Name != "tether-copy-externals" || inits[1].Image != "runner:1" {
		t.Fatalf("init containers %+v", inits)
	}
	if bad := restrictedViolations(objs.Pod); len(bad) > 0 {
		t.Errorf("the pod violates restricted: %v", bad)
	}
	for _, c := range []ImageCopy{
		{Name: "Bad_Name", Image: "i", Dir: "/d", Volume: "ext"},
		{Name: "x", Dir: "/d", Volume: "ext"},
		{Name: "x", Image: "i", Dir: "d", Volume: "ext"},
		{Name: "x", Image: "i", Dir: "/d", Volume: "nope"},
	} {
		s := spec
		s.ImageCopies = []ImageCopy{c}
		if _, err := Build(s); err == nil {
			t.Errorf("%+v: built", c)
		}
	}
}
