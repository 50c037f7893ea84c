package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/internal/runcmd"

	"github.com/tether-ci/tether/internal/cmdutil"
	"github.com/tether-ci/tether/settings"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tether.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Every kind of value reaches its flag: strings, numbers, bools, durations,
// lists for repeatable flags; flags on the command line win.
func TestConfigFileSetsFlags(t *testing.T) {
	path := writeConfig(t, `
image: alpine:3
namespace: ci
timeout: 30m
keep: true
memory: 64Mi
idle-timeout: 90s
env: [A=1, B=2]
toleration:
  - gpu:NoSchedule
node-selector: [pool=gpu]
label: [team=x]
annotation: {b: "2", a: one}
cpu: 2
`)
	var f runcmd.Flags
	fs := runcmd.NewFlagSet(&f)
	if _, err := cmdutil.ParseArgs(fs, []string{"--config", path, "--namespace", "cli-ns", "--label", "from=cli", "s.sh"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Pod.Complete(fs); err != nil {
		t.Fatal(err)
	}
	if f.Image != "alpine:3" || f.Timeout != 30*time.Minute || !f.Keep || f.Memory != "64Mi" || f.CPU != "2" || f.IdleTimeout != 90*time.Second {
		t.Errorf("scalars not set: %+v", f)
	}
	if !slices.Equal(f.Env, settings.StringList{"A=1", "B=2"}) || !slices.Equal(f.Tolerations, settings.StringList{"gpu:NoSchedule"}) || !slices.Equal(f.NodeSelector, settings.StringList{"pool=gpu"}) {
		t.Errorf("lists not set: env %v tolerations %v node-selector %v", f.Env, f.Tolerations, f.NodeSelector)
	}
	if !slices.Equal(f.Annotations, settings.StringList{"a=one", "b=2"}) {
		t.Errorf("a map for a K=V flag: annotations %v, want a=one and b=2 in key order", f.Annotations)
	}
	if f.Namespace != "cli-ns" || !slices.Equal(f.Labels, settings.StringList{"from=cli"}) {
		t.Errorf("command line did not win: namespace %q labels %v", f.Namespace, f.Labels)
	}
}

// Bad files get an error naming the file and the key.
func TestConfigFileErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"imgae: alpine\n", `unknown key "imgae" (did you mean "image"?)`},
		{"namespce: ci\n", `unknown key "namespce" (did you mean "namespace"?)`},
		{"frobnicate: 1\n", `unknown key "frobnicate": keys are the long names of tether run's flags (tether run --help)`},
		{"config: other.yaml\n", `unknown key "config"`},
		{"image: [a, b]\n", `key "image" (--image): a list, but the flag takes one value`},
		{"timeout: soon\n", `key "timeout": invalid value "soon" for --timeout`},
		{"image:\n", `key "image" (--image): no value (null)`},
		{"env: [{a: 1}]\n", `key "env" (--env): item 0: want a string, number or bool`},
		{"image: a\nimage: b\n", "not valid YAML"},
		{"- a\n", "want a map of flag names to values"},
		{"image: {a: b}\n", `key "image" (--image): a map, but the flag takes one value`},
		{"label: {a: [x]}\n", `key "label" (--label): key "a": want a string, number or bool`},
	} {
		path := writeConfig(t, tc.body)
		var f runcmd.Flags
		fs := runcmd.NewFlagSet(&f)
		if _, err := cmdutil.ParseArgs(fs, []string{"--config", path, "s.sh"}); err != nil {
			t.Fatal(err)
		}
		err := f.Pod.Complete(fs)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%q: error %v; want one naming %s and %q", tc.body, err, path, tc.want)
		}
	}
	var f runcmd.Flags
	fs := runcmd.NewFlagSet(&f)
	if err := settings.ApplyFile(fs, filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "--config: read the config file") {
		t.Errorf("missing file: %v", err)
	}
}

// The real CLI: a job's variables and after-script come from the file, and
// a bad key stops tether run with exit code 2 before anything runs.
func TestRunConfigFileCLI(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"a.sh": "echo \"a=$A\"\n", "after.sh": "echo after\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := writeConfig(t, "env: [A=from-config]\nafter: [after.sh]\nquiet: true\n")
	stdout, stderr, code := tether(t, dir, "run", "--local", "--config", cfg, "a.sh")
	if code != 0 || string(stdout) != "a=from-config\nafter\n" {
		t.Fatalf("exit %d stdout %q stderr %s", code, stdout, stderr)
	}
	bad := writeConfig(t, "envv: [A=1]\n")
	stdout, stderr, code = tether(t, dir, "run", "--local", "--config", bad, "a.sh")
	if code != exitUsage || len(stdout) != 0 || !strings.Contains(string(stderr), `unknown key "envv"`) {
		t.Fatalf("exit %d stdout %q stderr %s; want %d naming the key", code, stdout, stderr, exitUsage)
	}
}
