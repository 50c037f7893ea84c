// Package kubeconfigtest writes kubeconfig files for tests of the code
// that loads them (`--kubeconfig`, `--context`, the namespace default).
// Test-only.
package kubeconfigtest

import (
	"os"
	"testing"
)

// Write writes to path a kubeconfig whose current context is current
// (namespace ns) plus a context "second" (namespace ns-second), both
// pointing at a closed port (127.0.0.1:1) with a token that is no one's.
func Write(t testing.TB, path, current, ns string) {
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
