package transfer

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
)

// runLocally runs job as the shim would, with a real sh: its files staged
// under root/files (the shim's files dir), container paths under root.
func runLocally(t *testing.T, root string, job client.Job) {
	t.Helper()
	if out, err := tryLocally(t, root, job); err != nil {
		t.Fatalf("job %s: %v: %s", job.ID, err, out)
	}
}

// tryLocally is runLocally returning the job's output and error.
func tryLocally(t *testing.T, root string, job client.Job) ([]byte, error) {
	t.Helper()
	files := filepath.Join(root, "files")
	if err := os.MkdirAll(files, 0o700); err != nil {
		t.Fatal(err)
	}
	mapPaths := strings.NewReplacer(kube.FilesDir, files, "'/c/", "'"+root+"/c/")
	for _, f := range job.Files {
		mode := f.Mode
		if mode == 0 {
			mode = 0o700
		}
		p := mapPaths.Replace(f.Path)
		if err := os.WriteFile(p, []byte(mapPaths.Replace(string(f.Content))), mode); err != nil {
			t.Fatal(err)
		}
	}
	if len(job.Scripts) != 1 {
		t.Fatalf("job %s has scripts %q, want one", job.ID, job.Scripts)
	}
	var out bytes.Buffer
	cmd := exec.Command("sh", mapPaths.Replace(job.Scripts[0]))
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// A delivery job writes each file at its container path, shares the
// shared ones, and makes the links (replacing an old link); a directory
// where a link goes fails it, naming the link.
func TestDeliveryJob(t *testing.T) {
	root := t.TempDir()
	job := DeliveryJob("d", []File{
		{Container: "/c/a/one", Content: []byte("1\n")},
		{Container: "/c/b/two words", Content: []byte{0, 'x'}, Shared: true},
	}, []Link{{Link: "/c/ln", Target: "/c/a"}})
	runLocally(t, root, job)
	runLocally(t, root, job) // again: the link is replaced, not nested
	if b, err := os.ReadFile(filepath.Join(root, "c/ln/one")); err != nil || string(b) != "1\n" {
		t.Fatalf("through the link: %q, %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(root, "c/b/two words")); err != nil || fi.Mode().Perm()&0o066 != 0o066 {
		t.Fatalf("the shared file: %v, %v", fi, err)
	}
	if fi, err := os.Stat(filepath.Join(root, "c/a/one")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the private file: %v, %v", fi, err)
	}
	if _, err := os.Lstat(filepath.Join(root, "c/a/a")); err == nil {
		t.Fatal("the second run made a link inside the linked directory")
	}

	bad := DeliveryJob("bad", nil, []Link{{Link: "/c/a", Target: "/c/elsewhere"}})
	if out, err := tryLocally(t, root, bad); err == nil || !strings.Contains(string(out), "is a directory, not a link") {
		t.Fatalf("a directory in the link's way: %v, %q", err, out)
	}
}

// A tree walked on the runner's disk arrives whole: directories with
// their modes, files with theirs, links; a link leaving a contained tree
// is refused.
func TestWalkAndTree(t *testing.T) {
	src := t.TempDir()
	for _, d := range []string{"sub", "locked"} {
		if err := os.Mkdir(filepath.Join(src, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(src, "sub", "run.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/run.sh", filepath.Join(src, "ln")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(src, "locked"), 0o700); err != nil {
		t.Fatal(err)
	}
	entries, total, err := Walk(src, 100, true)
	if err != nil || total != int64(len("#!/bin/sh\n")) || len(entries) != 4 {
		t.Fatalf("walk: %v entries, %d bytes, %v", entries, total, err)
	}
	if _, _, err := Walk(src, 3, true); err == nil || !strings.Contains(err.Error(), ErrTooBig.Error()) {
		t.Fatalf("over budget: %v", err)
	}
	s := NewScript("copy", "copy a tree")
	s.Printf("mkdir -p '/c/dst' || fail 'cannot make it'\n")
	if err := s.Tree("/c/dst", entries, "'cannot copy'"); err != nil {
		t.Fatal(err)
	}
	s.DirModes("/c/dst", entries, "'cannot copy'")
	root := t.TempDir()
	runLocally(t, root, s.Job("copy.sh"))
	if fi, err := os.Stat(filepath.Join(root, "c/dst/sub/run.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("the file: %v, %v", fi, err)
	}
	if target, err := os.Readlink(filepath.Join(root, "c/dst/ln")); err != nil || target != "sub/run.sh" {
		t.Fatalf("the link: %q, %v", target, err)
	}
	if fi, err := os.Stat(filepath.Join(root, "c/dst/locked")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the directory's mode: %v, %v", fi, err)
	}

	if err := os.Symlink("/etc/passwd", filepath.Join(src, "out")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Walk(src, 100, true); err == nil || !strings.Contains(err.Error(), "outside the directory") {
		t.Fatalf("a link out of the tree: %v", err)
	}
}
