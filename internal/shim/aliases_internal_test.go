package shim

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/protocol"
)

func TestParseConfigCommandAlias(t *testing.T) {
	now := time.Now()
	noEnv := func(string) string { return "" }
	cfg, err := ParseConfig([]string{"--command-alias", "gitlab-runner=gitlab-runner-helper", "--command-alias=a=/opt/b, c=d"}, noEnv, io.Discard, now)
	if err != nil {
		t.Fatal(err)
	}
	want := []commandAlias{{"gitlab-runner", "gitlab-runner-helper"}, {"a", "/opt/b"}, {"c", "d"}}
	if !reflect.DeepEqual(cfg.CommandAliases, want) {
		t.Fatalf("aliases %+v, want %+v", cfg.CommandAliases, want)
	}
	env := map[string]string{"TETHER_COMMAND_ALIAS": "x=y,z=w"}
	cfg, err = ParseConfig(nil, func(k string) string { return env[k] }, io.Discard, now)
	if err != nil {
		t.Fatal(err)
	}
	if want := []commandAlias{{"x", "y"}, {"z", "w"}}; !reflect.DeepEqual(cfg.CommandAliases, want) {
		t.Fatalf("aliases from TETHER_COMMAND_ALIAS: %+v, want %+v", cfg.CommandAliases, want)
	}
	if !cfg.EnvNames["TETHER_COMMAND_ALIAS"] {
		t.Error("TETHER_COMMAND_ALIAS is not one of the variables scripts do not inherit")
	}
	// The command line wins over the variable.
	cfg, err = ParseConfig([]string{"--command-alias", "a=b"}, func(k string) string { return env[k] }, io.Discard, now)
	if err != nil {
		t.Fatal(err)
	}
	if want := []commandAlias{{"a", "b"}}; !reflect.DeepEqual(cfg.CommandAliases, want) {
		t.Fatalf("flag and variable: %+v, want the flag's %+v", cfg.CommandAliases, want)
	}
	for _, bad := range []string{"noequals", "=t", "n=", "a/b=t", "..=t", "n=rel/path", "n=a,n=b"} {
		if _, err := ParseConfig([]string{"--command-alias", bad}, noEnv, io.Discard, now); err == nil {
			t.Errorf("--command-alias %q: no error", bad)
		}
	}
}

// exe writes an executable file dir/name.
func exe(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAliasLinks(t *testing.T) {
	bin1, bin2, links := t.TempDir(), t.TempDir(), t.TempDir()
	target := exe(t, bin2, "helper")
	own := exe(t, bin1, "present")
	exe(t, bin2, "present-target")
	if err := os.WriteFile(filepath.Join(bin1, "not-exec"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(bin1, "a-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := bin1 + ":" + bin2
	mkdirs := 0
	mkdir := func() (string, error) { mkdirs++; return links, nil }
	got, dir := aliasLinks([]commandAlias{
		{"runner", "helper"},          // target found: linked
		{"present", "present-target"}, // name found: left alone
		{"absent", "also-absent"},     // neither: missing
		{"other", "not-exec"},         // a file without x bits is no command
		{"dir-alias", "a-dir"},        // nor is a directory
		{"abs", target},               // an absolute target
	}, path, mkdir)
	want := []protocol.CommandAlias{
		{Name: "runner", Target: "helper", Path: target, Linked: true},
		{Name: "present", Target: "present-target", Path: own},
		{Name: "absent", Target: "also-absent"},
		{Name: "other", Target: "not-exec"},
		{Name: "dir-alias", Target: "a-dir"},
		{Name: "abs", Target: target, Path: target, Linked: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("resolved\n %+v\nwant\n %+v", got, want)
	}
	if dir != links || mkdirs != 1 {
		t.Fatalf("link dir %q after %d mkdirs, want %q after one", dir, mkdirs, links)
	}
	for _, name := range []string{"runner", "abs"} {
		if l, err := os.Readlink(filepath.Join(links, name)); err != nil || l != target {
			t.Errorf("link %s -> %q (%v), want %s", name, l, err, target)
		}
	}
	if entries, _ := os.ReadDir(links); len(entries) != 2 {
		t.Errorf("link dir holds %d entries, want the 2 links", len(entries))
	}

	// A link left by an earlier shim (a restarted container) is replaced.
	stale := t.TempDir()
	if err := os.Symlink("/nowhere", filepath.Join(stale, "runner")); err != nil {
		t.Fatal(err)
	}
	got, dir = aliasLinks([]commandAlias{{"runner", "helper"}}, path, func() (string, error) { return stale, nil })
	if dir != stale || !got[0].Linked {
		t.Fatalf("over a stale link: %+v in %q", got, dir)
	}
	if l, _ := os.Readlink(filepath.Join(stale, "runner")); l != target {
		t.Errorf("stale link not replaced: -> %q", l)
	}

	// No link needed: no directory made, none returned.
	mkdirs = 0
	got, dir = aliasLinks([]commandAlias{{"present", "helper"}, {"absent", "nothing"}}, path, mkdir)
	if dir != "" || mkdirs != 0 || got[0].Path != own || !got[1].Missing() {
		t.Fatalf("no link needed: %+v, dir %q, %d mkdirs", got, dir, mkdirs)
	}

	// The directory cannot be made: the alias reports why, and is missing.
	got, dir = aliasLinks([]commandAlias{{"runner", "helper"}}, path, func() (string, error) { return "", errors.New("read-only file system") })
	if dir != "" || !got[0].Missing() || !strings.Contains(got[0].Error, "read-only file system") {
		t.Fatalf("unwritable: %+v, dir %q", got, dir)
	}
	if got, dir := aliasLinks(nil, path, mkdir); got != nil || dir != "" {
		t.Fatalf("no aliases: %+v %q", got, dir)
	}
}

func TestAliasEnv(t *testing.T) {
	env := []string{"A=1", "PATH=/usr/bin:/bin", "B=2"}
	if got := envPath(env); got != "/usr/bin:/bin" {
		t.Errorf("envPath = %q", got)
	}
	if got := envPath([]string{"A=1"}); got != defaultPath {
		t.Errorf("envPath without PATH = %q, want the default", got)
	}
	if got, want := withPathFirst(env, "/links"), []string{"A=1", "B=2", "PATH=/links:/usr/bin:/bin"}; !reflect.DeepEqual(got, want) {
		t.Errorf("withPathFirst = %q, want %q", got, want)
	}
	if got, want := withPathFirst([]string{"A=1"}, "/links"), []string{"A=1", "PATH=/links:" + defaultPath}; !reflect.DeepEqual(got, want) {
		t.Errorf("withPathFirst without PATH = %q, want %q", got, want)
	}
}

func TestCommandAliasesDirs(t *testing.T) {
	bin := t.TempDir()
	target := exe(t, bin, "helper")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	env := []string{"PATH=" + bin}

	// With a spool directory the links go into its bin, which stays.
	spool := t.TempDir()
	cfg := &Config{SpoolDir: spool, CommandAliases: []commandAlias{{"runner", "helper"}}}
	aliases, got, temp := commandAliases(cfg, env, log)
	links := filepath.Join(spool, "bin")
	if temp != "" || !aliases[0].Linked || !reflect.DeepEqual(got, []string{"PATH=" + links + ":" + bin}) {
		t.Fatalf("spool: %+v env %q temp %q", aliases, got, temp)
	}
	if l, _ := os.Readlink(filepath.Join(links, "runner")); l != target {
		t.Errorf("link -> %q", l)
	}

	// Without one, a temporary directory the shim removes at its end.
	t.Setenv("TMPDIR", t.TempDir())
	cfg.SpoolDir = ""
	aliases, got, temp = commandAliases(cfg, env, log)
	if temp == "" || !strings.HasPrefix(temp, os.Getenv("TMPDIR")) || !reflect.DeepEqual(got, []string{"PATH=" + temp + ":" + bin}) {
		t.Fatalf("no spool: %+v env %q temp %q", aliases, got, temp)
	}

	// Nothing to link: PATH untouched, no directory.
	cfg.CommandAliases = []commandAlias{{"x", "y"}}
	cfg.SpoolDir = filepath.Join(t.TempDir(), "spool")
	aliases, got, temp = commandAliases(cfg, env, log)
	if temp != "" || !reflect.DeepEqual(got, env) || !aliases[0].Missing() {
		t.Fatalf("nothing to link: %+v env %q temp %q", aliases, got, temp)
	}
	if _, err := os.Stat(cfg.SpoolDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a directory was made with nothing to link: %v", err)
	}
}
