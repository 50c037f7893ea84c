package runcmd

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tether-ci/tether/client/docker"
)

// TestContainerScripts: scripts keep their base names in the container;
// different files with one base name get numbered, a file given twice is
// placed once.
func TestContainerScripts(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	a := writeScript(t, dir, "a/build.sh", "echo a")
	b := writeScript(t, dir, "b/build.sh", "echo b")
	c := writeScript(t, dir, "clean.sh", "echo c")
	files, main, after, err := containerScripts([]string{a, b, a}, []string{c, b})
	if err != nil {
		t.Fatal(err)
	}
	wantMain := []string{docker.ScriptPath("build.sh"), docker.ScriptPath("2-build.sh"), docker.ScriptPath("build.sh")}
	wantAfter := []string{docker.ScriptPath("clean.sh"), docker.ScriptPath("2-build.sh")}
	if fmt.Sprint(main) != fmt.Sprint(wantMain) || fmt.Sprint(after) != fmt.Sprint(wantAfter) {
		t.Errorf("paths: main %v after %v; want %v %v", main, after, wantMain, wantAfter)
	}
	got := map[string]string{}
	for _, f := range files {
		got[f.Name] = string(f.Data)
	}
	want := map[string]string{"build.sh": "echo a", "2-build.sh": "echo b", "clean.sh": "echo c"}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(files) != 3 {
		t.Errorf("files %v, want %v", got, want)
	}
	if _, _, _, err := containerScripts([]string{filepath.Join(dir, "missing.sh")}, nil); err == nil {
		t.Error("a missing script is not an error")
	}
}

// writeScript writes an executable script name with body into dir and
// returns its path.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}
