//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/integration/actions"
	"github.com/tether-ci/tether/integration/actions/hookapi"
	"github.com/tether-ci/tether/internal/testing/actionsrunner"
)

// TestActionsMalformedInput covers the bad input TestActionsBadInput does
// not: each is a clear error on stderr (the step's log), a non-zero exit,
// and nothing left in the cluster. The runner itself never sends these;
// a hook must not guess at them. Last, a responseFile that cannot be
// written after the pod was made.
func TestActionsMalformedInput(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "actions-input")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r := newActionsRunner(t, c, ns, actions.EnvReconnectTimeout+"=10s")
	resp := r.Temp + "/_runner_hook_responses/bad.json"
	gone := `{"tetherPod":"tether-actions-gone","tetherNamespace":"` + ns + `"}`
	step := `{"entryPoint":"bash","entryPointArgs":["-c","'echo ran'"],"environmentVariables":{},"prependPath":[],"workingDirectory":"/"}`
	for _, tc := range []struct{ name, input, want string }{
		{"empty stdin", "", "no input on stdin"},
		{"only a newline", "\n", "no input on stdin"},
		{"a JSON array", `[{"command":"cleanup_job","responseFile":"` + resp + `"}]` + "\n", "not the runner's JSON object"},
		{"a JSON string", `"prepare_job"` + "\n", "not the runner's JSON object"},
		{"two JSON lines", `{"command":"cleanup_job","responseFile":"` + resp + `","args":{},"state":null}` + "\n" +
			`{"command":"cleanup_job","responseFile":"` + resp + `","args":{},"state":null}` + "\n", "more than one JSON value"},
		{"no command", `{"responseFile":"` + resp + `","args":{},"state":null}` + "\n", "no command"},
		{"command of the wrong type", `{"command":1,"responseFile":"` + resp + `","args":{},"state":null}` + "\n", "not the runner's JSON object"},
		{"args not an object", `{"command":"prepare_job","responseFile":"` + resp + `","args":"bash","state":null}` + "\n", "its args"},
		{"container of the wrong type", `{"command":"prepare_job","responseFile":"` + resp + `","args":{"container":"bash","services":[]},"state":null}` + "\n", "its args"},
		{"entryPointArgs of the wrong type", `{"command":"run_script_step","responseFile":"` + resp + `","args":{"entryPoint":"bash","entryPointArgs":"-c true"},"state":` + gone + `}` + "\n", "its args"},
		{"state naming a pod that no longer exists", `{"command":"run_script_step","responseFile":"` + resp + `","args":` + step + `,"state":` + gone + `}` + "\n", "tether-actions-gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := r.Start(ctx, []byte(tc.input))
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode == 0 || !strings.Contains(string(res.Stderr), tc.want) {
				t.Errorf("exit %d, stderr %q; want non-zero and %q", res.ExitCode, res.Stderr, tc.want)
			}
			if strings.Contains(string(res.Stdout), "ran") {
				t.Errorf("something ran: stdout %q", res.Stdout)
			}
		})
	}
	// A responseFile the hook cannot write (its directory is gone): the
	// pod prepare_job made is deleted before the hook exits non-zero.
	t.Run("response file cannot be written", func(t *testing.T) {
		job := actionsrunner.Container(BashImage, map[string]string{"HOME": "/github/home"}, nil)
		job["workingDirectory"] = r.Workspace()
		in, err := json.Marshal(map[string]any{"command": hookapi.CommandPrepareJob, "responseFile": r.Temp + "/no-such-dir/resp.json",
			"args": map[string]any{"container": job, "services": []any{}}, "state": nil})
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Start(ctx, append(in, '\n'))
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode == 0 || !strings.Contains(string(res.Stderr), "write the response file") {
			t.Errorf("exit %d, stderr %q; want non-zero and the response file named", res.ExitCode, res.Stderr)
		}
	})
	waitNoTetherObjects(ctx, t, c, ns, time.Minute)
}
