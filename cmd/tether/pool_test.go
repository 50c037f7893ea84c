package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tether pool check: exit 0 with one line per pool for a valid file, 2
// with the file's mistake (the message `tether run` gives for the same
// key) for a bad one or a bad command line.
func TestPoolCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", "pools:\n- name: small\n  image: alpine:3\n  size: 3\n  max-idle: 10m\n  cpu: 500m\n")
	stdout, stderr, code := tether(t, dir, "pool", "check", good)
	if code != 0 || string(stdout) != "pool small: image alpine:3, size 3, max-idle 10m0s\n" {
		t.Errorf("valid file: exit %d stdout %q stderr %s", code, stdout, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"pool", "check", write("key.yaml", "pools:\n- name: a\n  image: x\n  cpus: 1\n")}, `pool "a": unknown key "cpus" (did you mean "cpu"?)`},
		{[]string{"pool", "check", write("qty.yaml", "pools:\n- name: a\n  image: x\n  memory: lots\n")}, `pool "a": --memory "lots" is not a quantity`},
		{[]string{"pool", "check", write("img.yaml", "pools:\n- name: a\n")}, `pool "a": no image`},
		{[]string{"pool", "check"}, "want one argument, the pools file"},
		{[]string{"pool", "check", filepath.Join(dir, "missing.yaml")}, "read the pools file"},
		{[]string{"pool", "serve"}, "--config FILE is required"},
		{[]string{"pool", "frobnicate"}, `unknown command "frobnicate"`},
	} {
		_, stderr, code := tether(t, dir, c.args...)
		if code != exitUsage || !strings.Contains(string(stderr), c.want) {
			t.Errorf("%v: exit %d stderr %q, want %d and %q", c.args, code, stderr, exitUsage, c.want)
		}
	}
	stdout, _, code = tether(t, dir, "help", "pool")
	if code != 0 || !strings.Contains(string(stdout), "tether pool serve --config FILE") || !strings.Contains(string(stdout), "--max-idle") {
		t.Errorf("tether help pool: exit %d\n%s", code, stdout)
	}
}
