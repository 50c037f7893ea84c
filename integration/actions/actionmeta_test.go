package actions

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/actions/internal/shell"
	"github.com/tether-ci/tether/integration/actions/internal/transfer"
)

// runMetaScan runs the collect job's script (no file commands, the
// metadata listing of the workspace ws) with a real sh, the pod's files
// dir mapped to files, and returns the parsed metadata listing.
func runMetaScan(t *testing.T, files, ws string) (map[string][]byte, []string) {
	t.Helper()
	script := string(transfer.ListScript(nil)) + actionMetaScript() + "meta_scan " + shell.Quote(ws) + " 1\n"
	script = strings.ReplaceAll(script, kube.FilesDir, files)
	cmd := exec.Command("sh", "-c", script)
	if bb, err := exec.LookPath("busybox"); err == nil {
		// As in a busybox image: its applets only (no cksum, say).
		dir := t.TempDir()
		for _, a := range []string{"sh", "find", "grep", "cut", "sha256sum", "cat", "mv", "rm", "wc", "tr"} {
			if err := os.Symlink(bb, filepath.Join(dir, a)); err != nil {
				t.Fatal(err)
			}
		}
		cmd = exec.Command(filepath.Join(dir, "sh"), "-c", script)
		cmd.Env = []string{"PATH=" + dir}
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("collect script: %v", err)
	}
	_, _, rest, err := transfer.ParseListing(out)
	if err != nil {
		t.Fatal(err)
	}
	got, skipped, tail, err := transfer.ParseListing(rest)
	if err != nil || len(tail) != 0 {
		t.Fatalf("metadata listing: %v, %q after it", err, tail)
	}
	return got, skipped
}

// After a step, the workspace's action.yml and action.yaml files that
// changed since the last listing come back (not those under .git, not one
// above the size bound), are written into the runner's workspace, and the
// files the runner checks exist (a JavaScript action's scripts, a
// Dockerfile) get placeholders there; an unchanged file does not come
// back again.
func TestActionMetaBroughtBack(t *testing.T) {
	pod, files, host := t.TempDir(), t.TempDir(), t.TempDir()
	js := "name: js\nruns:\n  using: node20\n  main: dist/index.js\n  post: dist/post.js\n"
	writeFile(t, filepath.Join(pod, ".github", "actions", "js", "action.yml"), js, 0o644)
	writeFile(t, filepath.Join(pod, ".github", "actions", "js", "dist", "index.js"), "console.log(1)\n", 0o644)
	writeFile(t, filepath.Join(pod, ".github", "actions", "img", "action.yaml"), "runs:\n  using: docker\n  image: docker://busybox\n", 0o644)
	writeFile(t, filepath.Join(pod, "build", "action.yml"), "runs:\n  using: docker\n  image: Dockerfile\n", 0o644)
	writeFile(t, filepath.Join(pod, "with space", "action.yml"), "runs:\n  using: composite\n  steps: []\n", 0o644)
	writeFile(t, filepath.Join(pod, ".git", "x", "action.yml"), "not me\n", 0o644)
	writeFile(t, filepath.Join(pod, "big", "action.yml"), strings.Repeat("#", maxActionMetaFile+1), 0o644)
	writeFile(t, filepath.Join(pod, "README.md"), "not metadata\n", 0o644)
	m := &metaScan{container: pod, host: host}

	got, skipped := runMetaScan(t, files, pod)
	if len(got) != 4 || len(skipped) != 1 || !strings.HasPrefix(skipped[0], filepath.Join(pod, "big", "action.yml")) {
		t.Fatalf("brought back %d files, skipped %q", len(got), skipped)
	}
	if err := writeActionMeta(m, got); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{
		".github/actions/js/action.yml":       js,
		".github/actions/js/dist/index.js":    placeholderText,
		".github/actions/js/dist/post.js":     placeholderText,
		".github/actions/img/action.yaml":     "runs:\n  using: docker\n  image: docker://busybox\n",
		"build/action.yml":                    "runs:\n  using: docker\n  image: Dockerfile\n",
		"build/Dockerfile":                    placeholderText,
		"with space/action.yml":               "runs:\n  using: composite\n  steps: []\n",
		".git/x/action.yml":                   "",
		"README.md":                           "",
		".github/actions/img/docker:/busybox": "",
	} {
		b, err := os.ReadFile(filepath.Join(host, filepath.FromSlash(rel)))
		if string(b) != want || (want == "" && err == nil) {
			t.Errorf("runner's %s: %q (%v), want %q", rel, b, err, want)
		}
	}

	// Unchanged: nothing comes back. Changed: only that one.
	if got, skipped := runMetaScan(t, files, pod); len(got) != 0 || len(skipped) != 0 {
		t.Errorf("unchanged files came back: %d, %q", len(got), skipped)
	}
	writeFile(t, filepath.Join(pod, ".github", "actions", "img", "action.yaml"), "runs:\n  using: docker\n  image: docker://busybox:1\n", 0o644)
	got, _ = runMetaScan(t, files, pod)
	if len(got) != 1 || string(got[filepath.Join(pod, ".github", "actions", "img", "action.yaml")]) != "runs:\n  using: docker\n  image: docker://busybox:1\n" {
		t.Errorf("after a change: %q", got)
	}
	// A path outside the workspace is refused.
	if err := writeActionMeta(m, map[string][]byte{"/etc/action.yml": nil, pod + "/../x/action.yml": nil}); err == nil {
		t.Error("paths outside the workspace were written")
	}
}
