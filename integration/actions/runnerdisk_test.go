package actions

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/actions/hookapi"
)

// runnerMounts are the job container's system mounts as the runner sends
// them for a runner whose _work is work (ContainerOperationProvider.cs).
func runnerMounts(work string) []hookapi.Mount {
	m := func(src, dst string) hookapi.Mount {
		return hookapi.Mount{SourceVolumePath: src, TargetVolumePath: dst}
	}
	return []hookapi.Mount{
		m("/var/run/docker.sock", "/var/run/docker.sock"),
		m(work, "/__w"),
		m(filepath.Join(filepath.Dir(work), "externals"), "/__e"),
		m(filepath.Join(work, "_temp"), "/__w/_temp"),
		m(filepath.Join(work, "_actions"), "/__w/_actions"),
		m(filepath.Join(work, "_tool"), "/__w/_tool"),
		m(filepath.Join(work, "_temp", "_github_home"), "/github/home"),
		m(filepath.Join(work, "_temp", "_github_workflow"), "/github/workflow"),
	}
}

// runnerJob is a job container as the runner describes it.
func runnerJob(work string) *Container {
	return &Container{Image: "debian", WorkingDirectory: "/__w/repo/repo", SystemMountVolumes: runnerMounts(work)}
}

// runJobsLocally runs copy jobs as the job container's shim would: each
// job's files written into a files dir, then its script run by sh, with
// the container paths under /__w and /github mapped into root.
func runJobsLocally(t *testing.T, root string, jobs []client.Job) {
	t.Helper()
	files := filepath.Join(root, "files")
	if err := os.MkdirAll(files, 0o700); err != nil {
		t.Fatal(err)
	}
	mapPaths := strings.NewReplacer(kube.FilesDir, files, "'/__w/", "'"+root+"/__w/", "'/github/", "'"+root+"/github/")
	for _, job := range jobs {
		for _, f := range job.Files {
			mode := f.Mode
			if mode == 0 {
				mode = 0o700
			}
			p := mapPaths.Replace(f.Path)
			if err := os.WriteFile(p, []byte(mapPaths.Replace(string(f.Content))), mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
		}
		var out bytes.Buffer
		cmd := exec.Command("sh", mapPaths.Replace(job.Scripts[0]))
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("job %s: %v: %s", job.ID, err, out.Bytes())
		}
	}
}

// treeOf describes a tree: each entry's kind, mode, content or target.
func treeOf(t *testing.T, root string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			got[rel] = "link " + target
		case d.IsDir():
			got[rel] = "dir " + info.Mode().Perm().String()
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			got[rel] = "file " + info.Mode().Perm().String() + " " + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// The workspace, tool cache and home of the runner's disk arrive at the
// container paths the runner's mounts name, with empty directories, modes,
// symlinks and names with spaces; copied in several batches they are the
// same.
func TestRunnerDiskCopy(t *testing.T) {
	work := filepath.Join(t.TempDir(), "_work")
	ws := filepath.Join(work, "repo", "repo")
	writeFile(t, filepath.Join(ws, "README.md"), "# hello\n", 0o644)
	writeFile(t, filepath.Join(ws, "sub dir", "file with spaces.txt"), "spaced\n", 0o600)
	writeFile(t, filepath.Join(ws, "bin", "run"), "#!/bin/sh\necho run\n", 0o755)
	writeFile(t, filepath.Join(ws, "private", "key"), "k", 0o400)
	if err := os.MkdirAll(filepath.Join(ws, "empty", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(ws, "private"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("bin/run", filepath.Join(ws, "run")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(ws, "README.md"), filepath.Join(ws, "sub dir", "readme")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(work, "_tool", "mytool", "1.0.0", "x64", "bin", "mytool"), "#!/bin/sh\necho tool\n", 0o755)
	writeFile(t, filepath.Join(work, "_tool", "mytool", "1.0.0", "x64.complete"), "", 0o644)
	writeFile(t, filepath.Join(work, "_temp", "_github_home", ".config", "app.conf"), "home=1\n", 0o644)
	// Not copied: other parts of _work.
	writeFile(t, filepath.Join(work, "_temp", "other.sh"), "x", 0o644)

	disk, err := planRunnerDisk(runnerJob(work), DefaultCopyLimit)
	if err != nil {
		t.Fatal(err)
	}
	if disk.empty() || len(disk.dirs) != 3 {
		t.Fatalf("planned %+v", disk.dirs)
	}
	want := map[string]string{"/__w/repo/repo": ws, ToolDir: filepath.Join(work, "_tool"), HomeDir: filepath.Join(work, "_temp", "_github_home")}
	for _, batch := range []struct{ bytes int64 }{{copyBatchBytes}, {4}} {
		root := t.TempDir()
		for _, d := range disk.dirs {
			if want[d.container] != d.host {
				t.Errorf("%s from %s, want %s", d.container, d.host, want[d.container])
			}
			jobs, err := d.copyJobs(batch.bytes, 3)
			if err != nil {
				t.Fatal(err)
			}
			if batch.bytes == 4 && len(jobs) < 2 {
				t.Errorf("%s: %d jobs with small batches", d.container, len(jobs))
			}
			runJobsLocally(t, root, jobs)
		}
		for c, h := range want {
			src, dst := treeOf(t, h), treeOf(t, filepath.Join(root, filepath.FromSlash(c)))
			delete(src, ".")
			delete(dst, ".")
			if c == "/__w/repo/repo" {
				src["sub dir/readme"] = "link ../README.md" // an absolute link inside the tree becomes relative
			}
			if len(src) != len(dst) {
				t.Errorf("batch %d: %s: copied %v, want %v", batch.bytes, c, dst, src)
			}
			for k, v := range src {
				if dst[k] != v {
					t.Errorf("batch %d: %s: %q is %q, want %q", batch.bytes, c, k, dst[k], v)
				}
			}
		}
		entries, _ := os.ReadDir(filepath.Join(root, "files"))
		for _, e := range entries {
			if e.Name() != "copy.sh" && e.Name() != "action-meta.list" {
				t.Errorf("a staged file was left in the files dir: %s", e.Name())
			}
		}
	}
}

// Nothing on the runner's disk costs nothing: no job at all.
func TestRunnerDiskEmpty(t *testing.T) {
	work := filepath.Join(t.TempDir(), "_work")
	for _, d := range []string{filepath.Join(work, "repo", "repo"), filepath.Join(work, "_tool")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	disk, err := planRunnerDisk(runnerJob(work), DefaultCopyLimit)
	if err != nil || !disk.empty() {
		t.Fatalf("planned %+v, %v: want nothing to copy", disk, err)
	}
	// A tool cache elsewhere, _work/_tool a link to it: its files.
	elsewhere := filepath.Join(t.TempDir(), "hostedtoolcache")
	writeFile(t, filepath.Join(elsewhere, "t", "1", "x64", "bin", "t"), "t", 0o755)
	if err := os.Remove(filepath.Join(work, "_tool")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(work, "_tool")); err != nil {
		t.Fatal(err)
	}
	disk, err = planRunnerDisk(runnerJob(work), DefaultCopyLimit)
	if err != nil || disk.empty() || disk.dirs[1].container != ToolDir || len(disk.dirs[1].entries) != 5 {
		t.Fatalf("a linked tool cache: planned %+v, %v", disk, err)
	}
	// No mounts (an older runner): nothing either.
	disk, err = planRunnerDisk(&Container{Image: "debian", WorkingDirectory: "/__w/repo/repo"}, DefaultCopyLimit)
	if err != nil || !disk.empty() {
		t.Fatalf("planned %+v, %v without mounts", disk, err)
	}
}

// A tree over the bound fails with the directory and the setting named; a
// symlink out of the tree is refused, naming it.
func TestRunnerDiskRefusals(t *testing.T) {
	work := filepath.Join(t.TempDir(), "_work")
	writeFile(t, filepath.Join(work, "repo", "repo", "a"), strings.Repeat("a", 600), 0o644)
	writeFile(t, filepath.Join(work, "_tool", "t"), strings.Repeat("t", 600), 0o644)
	_, err := planRunnerDisk(runnerJob(work), 1000)
	if err == nil || !strings.Contains(err.Error(), "tool cache "+filepath.Join(work, "_tool")) || !strings.Contains(err.Error(), EnvCopyLimit+"=1k") {
		t.Errorf("err %v: want the tool cache and %s named", err, EnvCopyLimit)
	}
	_, err = planRunnerDisk(runnerJob(work), 100)
	if err == nil || !strings.Contains(err.Error(), "workspace "+filepath.Join(work, "repo", "repo")) {
		t.Errorf("err %v: want the workspace named", err)
	}
	if _, err := planRunnerDisk(runnerJob(work), 1200); err != nil {
		t.Errorf("within the bound: %v", err)
	}
	for _, target := range []string{"/etc/passwd", "../../x", "../.."} {
		link := filepath.Join(work, "repo", "repo", "sub", "link")
		_ = os.Remove(link)
		writeFile(t, filepath.Join(work, "repo", "repo", "sub", "f"), "", 0o644)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		_, err := planRunnerDisk(runnerJob(work), DefaultCopyLimit)
		if err == nil || !strings.Contains(err.Error(), "sub/link points to "+target+", outside the directory") {
			t.Errorf("link to %s: err %v", target, err)
		}
	}
}

// TETHER_ACTIONS_COPY_LIMIT takes a quantity.
func TestCopyLimitSetting(t *testing.T) {
	for v, want := range map[string]int64{"": DefaultCopyLimit, "512Mi": 512 << 20, "0": 0, "1000": 1000} {
		s, err := SettingsFromEnv(func(k string) string { return map[string]string{EnvCopyLimit: v}[k] })
		if err != nil || s.CopyLimit != want {
			t.Errorf("%q: %d, %v; want %d", v, s.CopyLimit, err, want)
		}
	}
	for _, v := range []string{"lots", "-1Mi"} {
		if _, err := SettingsFromEnv(func(k string) string { return map[string]string{EnvCopyLimit: v}[k] }); err == nil || !strings.Contains(err.Error(), EnvCopyLimit) {
			t.Errorf("%q: err %v", v, err)
		}
	}
}
