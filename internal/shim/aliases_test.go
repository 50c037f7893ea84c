package shim_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/protocol"
)

// hello returns the shim's hello record.
func (p *shimProc) hello() protocol.Hello {
	p.t.Helper()
	r, _ := p.waitRecord(0, 5*time.Second, ofType(protocol.TypeHello))
	var h protocol.Hello
	if err := json.Unmarshal(r.Payload, &h); err != nil {
		p.t.Fatal(err)
	}
	return h
}

// aliasFixture is a directory of commands for the scripts' PATH: a stand-in
// for a helper binary that prints the name it was called by and its
// arguments, and optionally a command of the alias's own name.
func aliasFixture(t *testing.T, withOwn bool) string {
	t.Helper()
	bin := t.TempDir()
	for _, d := range []string{bin, filepath.Dir(bin)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script(t, bin, "fake-runner-helper", "#!/bin/sh\necho \"helper called as ${0##*/}: $*\"\n")
	if withOwn {
		script(t, bin, "gitlab-runner", "#!/bin/sh\necho \"own gitlab-runner: $*\"\n")
	}
	return bin
}

// The runner's guard, then a direct call, the lookup and the PATH.
const aliasScript = `if gitlab-runner --version >/dev/null 2>&1; then echo guard-passed; else echo "Missing gitlab-runner."; fi
gitlab-runner artifacts-uploader --path "a b"
command -v gitlab-runner || echo not-found
echo "PATH=$PATH"
`

// Where the scripts' PATH has only the alias's target, scripts that call
// the alias run the target (through a link in the spool directory, first
// on their PATH), `command -v` finds it, and the hello says so. As a
// non-root user, like a restricted pod.
func TestCommandAliasLinksTarget(t *testing.T) {
	bin := aliasFixture(t, false)
	spool := t.TempDir()
	if err := os.Chown(spool, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	s := script(t, bin, "stage.sh", aliasScript)
	path := bin + ":/usr/bin:/bin"
	p := startShim(t, []string{"--spool-dir", spool, "--command-alias", "gitlab-runner=fake-runner-helper"},
		withEnv("PATH", path), asUser(65534, 65534))
	p.send(run(s))
	if st := p.waitStatus(s, 5*time.Second); st.CommandExitCode != 0 {
		t.Fatalf("status %+v\n%s", st, p.output())
	}
	links := filepath.Join(spool, "bin")
	want := "guard-passed\nhelper called as gitlab-runner: artifacts-uploader --path a b\n" +
		links + "/gitlab-runner\nPATH=" + links + ":" + path + "\n"
	if got := string(p.output()); got != want {
		t.Fatalf("output\n%s\nwant\n%s", got, want)
	}
	wantAliases := []protocol.CommandAlias{{Name: "gitlab-runner", Target: "fake-runner-helper", Path: filepath.Join(bin, "fake-runner-helper"), Linked: true}}
	if got := p.hello().CommandAliases; !reflect.DeepEqual(got, wantAliases) {
		t.Fatalf("hello aliases %+v, want %+v", got, wantAliases)
	}
}

// Where neither the alias nor its target is on PATH, nothing changes: the
// runner's guard takes its else branch, PATH is the shim's, and the hello
// reports the alias missing.
func TestCommandAliasWithoutTarget(t *testing.T) {
	bin := aliasFixture(t, false)
	spool := t.TempDir()
	s := script(t, bin, "stage.sh", aliasScript)
	path := "/usr/bin:/bin"
	p := startShim(t, []string{"--spool-dir", spool}, withEnv("PATH", path), withEnv("TETHER_COMMAND_ALIAS", "gitlab-runner=gitlab-runner-helper-absent"))
	p.send(run(s))
	p.waitStatus(s, 5*time.Second)
	// Between them, the shell's own "not found" for the direct call.
	head, end := "Missing gitlab-runner.\n", "not-found\nPATH="+path+"\n"
	if got := string(p.output()); !strings.HasPrefix(got, head) || !strings.HasSuffix(got, end) || !strings.Contains(got, "not found") {
		t.Fatalf("output\n%s\nwant the guard's else branch, the shell's not found, then\n%s", got, end)
	}
	h := p.hello()
	if len(h.CommandAliases) != 1 || !h.CommandAliases[0].Missing() || h.CommandAliases[0].Error != "" {
		t.Fatalf("hello aliases %+v, want gitlab-runner missing", h.CommandAliases)
	}
	if _, err := os.Stat(filepath.Join(spool, "bin")); !os.IsNotExist(err) {
		t.Errorf("a link directory was made with nothing to link: %v", err)
	}
}

// A command of the alias's own name on PATH wins: it runs, and PATH stays.
func TestCommandAliasOwnCommandWins(t *testing.T) {
	bin := aliasFixture(t, true)
	s := script(t, bin, "stage.sh", aliasScript)
	path := bin + ":/usr/bin:/bin"
	p := startShim(t, []string{"--spool-dir", t.TempDir(), "--command-alias", "gitlab-runner=fake-runner-helper"}, withEnv("PATH", path))
	p.send(run(s))
	p.waitStatus(s, 5*time.Second)
	want := "guard-passed\nown gitlab-runner: artifacts-uploader --path a b\n" + bin + "/gitlab-runner\nPATH=" + path + "\n"
	if got := string(p.output()); got != want {
		t.Fatalf("output\n%s\nwant\n%s", got, want)
	}
	a := p.hello().CommandAliases
	if len(a) != 1 || a[0].Linked || a[0].Path != filepath.Join(bin, "gitlab-runner") {
		t.Fatalf("hello aliases %+v, want gitlab-runner's own path, not linked", a)
	}
}
