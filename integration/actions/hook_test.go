package actions

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether-ci/tether/integration/actions/hookapi"
)

// Main turns bad input into exit code 1 and one clear line on stderr,
// without touching the cluster (no kubeconfig is reachable here).
func TestMainBadInput(t *testing.T) {
	for _, in := range []string{"", "{", `{"command":"nope","responseFile":"r"}`, `{"command":"prepare_job"}`} {
		var stdout, stderr bytes.Buffer
		h := &Hook{Getenv: func(string) string { return "" }, Stdout: &stdout, Stderr: &stderr}
		if code := Main(context.Background(), h, strings.NewReader(in)); code != 1 {
			t.Errorf("input %q: exit code %d, want 1", in, code)
		}
		if !strings.HasPrefix(stderr.String(), "Error: tether actions: ") || strings.Count(stderr.String(), "\n") != 1 || stdout.Len() != 0 {
			t.Errorf("input %q: stdout %q, stderr %q", in, stdout.String(), stderr.String())
		}
	}
}

// Commands that need the job's pod refuse to run without state, before
// any API call.
func TestRunScriptStepWithoutState(t *testing.T) {
	var stderr bytes.Buffer
	h := &Hook{Getenv: func(string) string { return "" }, Stdout: &bytes.Buffer{}, Stderr: &stderr}
	in := `{"command":"run_script_step","responseFile":"r","args":{"entryPoint":"sh","entryPointArgs":[]},"state":null}`
	if code := Main(context.Background(), h, strings.NewReader(in)); code != 1 || !strings.Contains(stderr.String(), "prepare_job did not run") {
		t.Fatalf("code %d, stderr %q", code, stderr.String())
	}
}

// The response has the shape the runner requires: isAlpine, a state
// object, services in order, ports objects that are never null.
func TestPrepareResponseShape(t *testing.T) {
	args := PrepareJobArgs{
		Container: &Container{Image: "node:20", PortMappings: []string{"8080:80/tcp"}},
		Services:  []Container{{Image: "redis:7", PortMappings: []string{"6380"}}},
	}
	args.Services = append(args.Services, Container{Image: "postgres:16"})
	path := filepath.Join(t.TempDir(), "resp.json")
	if err := hookapi.WriteResponse(path, prepareResponse(&hookapi.State{Pod: "p", Namespace: "ns"}, &args, true)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"state":{"tetherPod":"p","tetherNamespace":"ns"},"context":{"container":{"image":"node:20","ports":{"80":"80"}},` +
		`"services":[{"image":"redis:7","ports":{"6380":"6380"}},{"image":"postgres:16","ports":{}}]},"isAlpine":true}` + "\n"
	if string(b) != want {
		t.Fatalf("response\n%s\nwant\n%s", b, want)
	}
}
