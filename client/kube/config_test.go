package kube

import (
	"os"
	"path/filepath"
	"testing"
)

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: one
  cluster: {server: "https://one.example:6443"}
- name: two
  cluster: {server: "https://two.example:6443"}
users:
- name: u
  user: {token: "t"}
contexts:
- name: first
  context: {cluster: one, user: u, namespace: ci}
- name: second
  context: {cluster: two, user: u}
current-context: first
`

func TestLoadConfigFollowsKubectlRules(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	if err := os.WriteFile(path, []byte(testKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	// No in-cluster fallback and no ~/.kube/config from the machine.
	t.Setenv("HOME", dir)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")

	for _, tc := range []struct {
		name             string
		env              string
		opts             ConfigOptions
		wantHost, wantNS string
	}{
		{"$KUBECONFIG, current context", path, ConfigOptions{}, "https://one.example:6443", "ci"},
		{"--kubeconfig", "", ConfigOptions{Kubeconfig: path}, "https://one.example:6443", "ci"},
		{"--context", path, ConfigOptions{Context: "second"}, "https://two.example:6443", "default"},
		{"-n wins", path, ConfigOptions{Namespace: "other"}, "https://one.example:6443", "other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.env)
			cfg, ns, err := LoadConfig(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tc.wantHost || ns != tc.wantNS {
				t.Fatalf("host %s namespace %s; want %s and %s", cfg.Host, ns, tc.wantHost, tc.wantNS)
			}
		})
	}

	t.Setenv("KUBECONFIG", "")
	if _, _, err := LoadConfig(ConfigOptions{}); err == nil {
		t.Fatal("LoadConfig without any configuration succeeded")
	}
	if _, _, err := LoadConfig(ConfigOptions{Kubeconfig: path, Context: "missing"}); err == nil {
		t.Fatal("LoadConfig with an unknown context succeeded")
	}
}
