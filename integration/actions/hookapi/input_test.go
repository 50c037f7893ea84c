package hookapi

import (
	"encoding/json"
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
	if err := in.DecodeArgs(&args); err != nil {
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
