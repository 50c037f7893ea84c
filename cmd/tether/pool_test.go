package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
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

// tether pool serve and status run tether-pool from beside tether, with
// the subcommand's flags, output and exit code unchanged; found through a
// link too (kubectl-tether), and a clear error when it is missing.
func TestPoolServeAndStatusRunTetherPool(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := tether(t, dir, "pool", "serve", "--help")
	if code != 0 || !strings.Contains(string(stdout), "Usage: tether pool serve --config FILE") || !strings.Contains(string(stdout), "--metrics-address") {
		t.Errorf("tether pool serve --help: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	_, stderr, code = tether(t, dir, "pool", "status", "--kubeconfig", filepath.Join(dir, "missing"))
	if code != exitPoolMissing || !strings.Contains(string(stderr), "tether pool status: cannot reach Kubernetes") {
		t.Errorf("tether pool status without a cluster: exit %d stderr %q", code, stderr)
	}
	_, stderr, code = tether(t, dir, "pool", "serve", "--bogus")
	if code != exitUsage || !strings.Contains(string(stderr), "unknown flag: --bogus") {
		t.Errorf("tether pool serve --bogus: exit %d stderr %q", code, stderr)
	}

	link := filepath.Join(dir, "kubectl-tether")
	if err := os.Symlink(filepath.Join(binDir, "tether"), link); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(link, "pool", "serve", "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--metrics-address") {
		t.Errorf("kubectl-tether pool serve --help: %v\n%s", err, out)
	}

	// tether alone (a hard link has its own directory), nothing on PATH.
	alone := filepath.Join(t.TempDir(), "tether")
	if err := os.Link(filepath.Join(binDir, "tether"), alone); err != nil {
		data, rerr := os.ReadFile(filepath.Join(binDir, "tether")) // another file system: a copy
		if rerr != nil {
			t.Fatal(rerr)
		}
		if err := os.WriteFile(alone, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(alone, "pool", "serve", "--config", "x.yaml")
	cmd.Env = append(os.Environ(), "PATH="+dir)
	out, err = cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitPoolMissing || !strings.Contains(string(out), "tether-pool (the pools' controller) is neither beside tether nor on $PATH") {
		t.Errorf("tether pool serve without tether-pool: %v\n%s", err, out)
	}
}

// With --log-format json every stderr line of tether pool serve is a JSON
// object, a usage error too, as before tether-pool was its own program.
func TestPoolServeJSONErrors(t *testing.T) {
	_, stderr, code := tether(t, t.TempDir(), "pool", "serve", "--log-format", "json")
	lines := strings.Split(strings.TrimSpace(string(stderr)), "\n")
	if code != exitUsage || len(lines) == 0 || !strings.Contains(string(stderr), "--config FILE is required") {
		t.Fatalf("exit %d stderr %q", code, stderr)
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("not JSON: %q", l)
		}
	}
}
