package gccmd

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tether-ci/tether/internal/cmdutil"
	"github.com/tether-ci/tether/internal/gc"
)

func TestGCFlags(t *testing.T) {
	parse := func(args ...string) (gc.Options, gc.Format, error) {
		var f Options
		if _, err := cmdutil.ParseArgs(NewFlagSet(&f), args); err != nil {
			return gc.Options{}, "", err
		}
		return f.CleanerOptions()
	}
	o, format, err := parse("-n", "a,b", "--namespace", "c", "--dry-run", "--grace", "30s", "-l", "x=y", "--log-format", "json", "--resources", "pods,secrets")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.Namespaces, []string{"a", "b", "c"}) || o.DryRun != gc.DryRunClient || o.Grace != 30*time.Second ||
		o.Selector != "x=y" || format != gc.FormatJSON || !slices.Equal(o.Kinds, []gc.Kind{gc.KindPod, gc.KindSecret}) {
		t.Errorf("options %+v format %s", o, format)
	}
	o, _, err = parse("-A", "--dry-run=server", "--grace", "0")
	if err != nil || !slices.Equal(o.Namespaces, []string{""}) || o.DryRun != gc.DryRunServer || o.Grace >= 0 {
		t.Errorf("options %+v err %v (want all namespaces, server dry run, no grace)", o, err)
	}
	o, _, err = parse()
	if err != nil || len(o.Namespaces) != 0 || o.DryRun != gc.DryRunNone || o.Grace != gc.DefaultGrace || len(o.Kinds) != 3 {
		t.Errorf("defaults %+v err %v", o, err)
	}
	for _, bad := range [][]string{
		{"-A", "-n", "x"}, {"-n", "a,,b"}, {"--grace", "-1s"}, {"--log-format", "xml"},
		{"--resources", "pods,deployments"}, {"--chunk-size", "0"}, {"--dry-run=maybe"},
	} {
		if _, _, err := parse(bad...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestLoadKubeConfigNamespace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	writeKubeconfig(t, path, "first", "ns-first")
	t.Setenv("KUBECONFIG", path)
	cfg, ns, err := LoadKubeConfig("", "")
	if err != nil || ns != "ns-first" || cfg.Host != "https://127.0.0.1:1" {
		t.Fatalf("KUBECONFIG: ns %q host %v err %v", ns, cfg, err)
	}
	if _, ns, err = LoadKubeConfig("", "second"); err != nil || ns != "ns-second" {
		t.Fatalf("--context second: ns %q err %v", ns, err)
	}
	other := filepath.Join(dir, "other")
	writeKubeconfig(t, other, "o", "")
	if _, ns, err = LoadKubeConfig(other, ""); err != nil || ns != "default" {
		t.Fatalf("--kubeconfig without namespace: ns %q err %v", ns, err)
	}
	if _, _, err = LoadKubeConfig("", "missing"); err == nil {
		t.Fatal("unknown context accepted")
	}
}

// writeKubeconfig writes a kubeconfig whose current context is current
// (namespace ns) plus a context "second" (namespace ns-second), both
// pointing at a closed port.
func writeKubeconfig(t *testing.T, path, current, ns string) {
	t.Helper()
	cfg := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: not-a-real-token}
contexts:
- name: ` + current + `
  context: {cluster: c, user: u, namespace: "` + ns + `"}
- name: second
  context: {cluster: c, user: u, namespace: ns-second}
current-context: ` + current + `
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}
