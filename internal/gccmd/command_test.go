package gccmd

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tether-ci/tether/internal/cmdutil"
	"github.com/tether-ci/tether/internal/gc"
	"github.com/tether-ci/tether/internal/testing/kubeconfigtest"
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
	kubeconfigtest.Write(t, path, "first", "ns-first")
	t.Setenv("KUBECONFIG", path)
	cfg, ns, err := LoadKubeConfig("", "")
	if err != nil || ns != "ns-first" || cfg.Host != "https://127.0.0.1:1" {
		t.Fatalf("KUBECONFIG: ns %q host %v err %v", ns, cfg, err)
	}
	if _, ns, err = LoadKubeConfig("", "second"); err != nil || ns != "ns-second" {
		t.Fatalf("--context second: ns %q err %v", ns, err)
	}
	other := filepath.Join(dir, "other")
	kubeconfigtest.Write(t, other, "o", "")
	if _, ns, err = LoadKubeConfig(other, ""); err != nil || ns != "default" {
		t.Fatalf("--kubeconfig without namespace: ns %q err %v", ns, err)
	}
	if _, _, err = LoadKubeConfig("", "missing"); err == nil {
		t.Fatal("unknown context accepted")
	}
}
