package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The runner's input as actions/runner serializes it: camelCase, nulls
// included, one line.
const prepareInput = `{"command":"prepare_job","responseFile":"/r/_work/_temp/_runner_hook_responses/x.json","args":{"container":{"image":"node:20","dockerfile":null,"entryPointArgs":[],"entryPoint":null,"workingDirectory":"/__w/repo/repo","createOptions":null,"environmentVariables":{"HOME":"/github/home"},"portMappings":["8080:80/tcp"],"registry":null,"systemMountVolumes":[],"userMountVolumes":[]},"services":[{"image":"redis:7","dockerfile":null,"entryPointArgs":["--port","6380"],"entryPoint":null,"workingDirectory":null,"createOptions":null,"environmentVariables":{},"portMappings":["6380"],"registry":null,"systemMountVolumes":null,"userMountVolumes":[]}]},"state":null}` + "\n"

func TestReadInputPrepareJob(t *testing.T) {
	in, err := ReadInput(strings.NewReader(prepareInput))
	if err != nil {
		t.Fatal(err)
	}
	if in.Command != CommandPrepareJob || in.State != nil || !strings.HasSuffix(in.ResponseFile, "x.json") {
		t.Fatalf("input = %+v", in)
	}
	var args PrepareJobArgs
	if err := decodeArgs(in, &args); err != nil {
		t.Fatal(err)
	}
	if args.Container.Image != "node:20" || args.Container.EnvironmentVariables["HOME"] != "/github/home" ||
		len(args.Services) != 1 || args.Services[0].Image != "redis:7" || args.Container.EntryPoint != "" {
		t.Fatalf("args = %+v", args)
	}
}

func TestReadInputRefusesBadInput(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"empty":           {"", "no input on stdin"},
		"malformed":       {`{"command":`, "not the runner's JSON object"},
		"not an object":   {`[1,2]`, "not the runner's JSON object"},
		"two values":      {`{"command":"cleanup_job","responseFile":"r"} {}`, "more than one JSON value"},
		"no command":      {`{"responseFile":"r"}`, "no command"},
		"unknown command": {`{"command":"run_everything","responseFile":"r"}`, `unknown command "run_everything"`},
		"no response":     {`{"command":"cleanup_job","args":{}}`, "no responseFile"},
		"null response":   {`{"command":"cleanup_job","responseFile":null}`, "no responseFile"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ReadInput(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

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

func TestPrependPathForms(t *testing.T) {
	for in, want := range map[string]PathList{
		`{"prependPath":["/a","/b"]}`: {"/a", "/b"},
		`{"prependPath":"/a:/b"}`:     {"/a", "/b"},
		`{"prependPath":null}`:        nil,
	} {
		var a ScriptStepArgs
		if err := json.Unmarshal([]byte(in), &a); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if !reflect.DeepEqual(a.PrependPath, want) {
			t.Errorf("%s: %q, want %q", in, a.PrependPath, want)
		}
	}
}

// The response has the shape the runner requires: isAlpine, a state
// object, services in order, ports objects that are never null.
func TestPrepareResponseShape(t *testing.T) {
	in, err := ReadInput(strings.NewReader(prepareInput))
	if err != nil {
		t.Fatal(err)
	}
	var args PrepareJobArgs
	if err := decodeArgs(in, &args); err != nil {
		t.Fatal(err)
	}
	args.Services = append(args.Services, Container{Image: "postgres:16"})
	path := filepath.Join(t.TempDir(), "resp.json")
	if err := WriteResponse(path, prepareResponse(&State{Pod: "p", Namespace: "ns"}, &args, true)); err != nil {
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
