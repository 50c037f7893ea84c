package runcmd

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
)

// specOf returns the pod spec `tether run ARGS script` gives its job.
func specOf(t *testing.T, args ...string) kube.Spec {
	t.Helper()
	script := filepath.Join(t.TempDir(), "job.sh")
	if err := os.WriteFile(script, []byte("echo hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var f Flags
	fs := NewFlagSet(&f)
	if err := fs.Parse(append(args, script)); err != nil {
		t.Fatal(err)
	}
	if err := f.Pod.Complete(fs); err != nil {
		t.Fatal(err)
	}
	if err := f.Validate(fs.Args()); err != nil {
		t.Fatal(err)
	}
	f.Logger = slog.New(slog.DiscardHandler)
	spec, code := jobSpec(&f, client.Job{Scripts: f.Scripts}, "ci")
	if code != 0 {
		t.Fatalf("jobSpec: exit %d", code)
	}
	return spec
}

// A `tether run --pool` job's settings hash like a pool of the same pod
// settings, whatever its job data (variables, timeouts, labels); a
// pod-shaping flag makes them differ.
func TestRunPoolHashMatchesThePool(t *testing.T) {
	pool, err := kube.PoolHash(kube.Spec{Namespace: "ci", Image: "alpine:3", HelperImage: "example.com/shim:1"})
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"--pool", "small", "--image", "alpine:3", "--helper-image", "example.com/shim:1"}
	for _, extra := range [][]string{
		nil,
		{"--env", "TOKEN=s3cret-value", "--mask-env", "TOKEN", "--timeout", "5m", "--ttl", "1h", "--after-timeout", "0"},
		{"--idle-timeout", "1m", "--label", "team=blue", "--annotation", "note=x"},
	} {
		got, err := kube.PoolHash(specOf(t, append(append([]string{}, base...), extra...)...))
		if err != nil || got != pool {
			t.Errorf("tether run %v: hash %s, %v; want the pool's %s", extra, got, err, pool)
		}
	}
	for _, extra := range [][]string{{"--cpu", "2"}, {"--tty"}, {"--restricted"}, {"--shim-from", "image"}} {
		got, err := kube.PoolHash(specOf(t, append(append([]string{}, base...), extra...)...))
		if err != nil || got == pool {
			t.Errorf("tether run %v: hash %s, %v; want one other than the pool's", extra, got, err)
		}
	}
}
