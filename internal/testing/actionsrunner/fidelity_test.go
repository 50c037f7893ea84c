package actionsrunner

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// The input is one line in HookInput.cs's key order, nulls kept, and <, >
// and & as Newtonsoft.Json writes them (not \u003c …).
func TestMarshalInput(t *testing.T) {
	got, err := marshalInput("run_script_step", "/r/_work/_temp/_runner_hook_responses/x.json",
		map[string]any{"environmentVariables": map[string]string{"A": "<b>&</b>"}, "entryPoint": nil}, json.RawMessage(`{"p":1}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"command":"run_script_step","responseFile":"/r/_work/_temp/_runner_hook_responses/x.json",` +
		`"args":{"entryPoint":null,"environmentVariables":{"A":"<b>&</b>"}},"state":{"p":1}}` + "\n"
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// The hook's PATH starts with the job's prepend path, most recent first.
func TestHookEnvPrependPath(t *testing.T) {
	r := &Runner{Env: []string{"A=1", "PATH=/usr/bin:/bin"}}
	if got := r.hookEnv(); !slices.Equal(got, r.Env) {
		t.Errorf("no prepend path: %q", got)
	}
	r.PrependPath = []string{"/old", "/new"}
	got := r.hookEnv()
	if !slices.Equal(got, []string{"A=1", "PATH=/new:/old:/usr/bin:/bin"}) {
		t.Errorf("hook env %q", got)
	}
	if r.Env[1] != "PATH=/usr/bin:/bin" {
		t.Errorf("r.Env changed: %q", r.Env)
	}
}

// The step log reads lines as StreamReader.ReadLine does and applies the
// workflow commands and masks as OutputManager does.
func TestStepLog(t *testing.T) {
	var l StepLog
	l.Add([]byte("one\r\ntwo\rthree\ncaf\xc3\xa9 \xff\xfe\n" +
		"::add-mask::s3cret\n  ::debug::hidden\nthe s3cret here\n" +
		"::add-mask::multi%0Aline two \n" +
		"::error file=a.sh::bad%25\n::group::G\n::endgroup::\n::unknown::shown\n" +
		"::stop-commands::tok\n::add-mask::visible\n::tok::\n::add-mask::\nline two and multi\nlast without newline"))
	want := []string{"one", "two", "three", "café \ufffd\ufffd", "the *** here",
		"##[error]bad%", "##[group]G", "##[endgroup]", "::unknown::shown",
		"::add-mask::visible", "::tok::",
		"##[warning]Can't add secret mask for empty string in ##[add-mask] command.",
		"*** and ***", "last without newline"}
	if !slices.Equal(l.Lines, want) {
		t.Errorf("lines\n%q\nwant\n%q", l.Lines, want)
	}
	if !slices.Contains(l.Secrets, "multi\nline two ") || !slices.Contains(l.Secrets, "line two") {
		t.Errorf("secrets %q", l.Secrets)
	}
}

// Each invocation's lines are in its Result and the job's Log, the masks
// carried from one invocation to the next.
func TestInvokeLog(t *testing.T) {
	script := `in=$(cat)
case $in in
  *prepare_job*) echo "::add-mask::hunter2"; echo "pw hunter2"; printf '{"isAlpine":false}' > "$(printf '%s' "$in" | sed 's/.*"responseFile":"\([^"]*\)".*/\1/')" ;;
  *cleanup_job*) echo "still hunter2" >&2; echo "PATH=$PATH" ;;
esac
`
	r := scriptedRunner(t, script)
	ctx := context.Background()
	res, err := r.PrepareJob(ctx, "busybox", nil, nil)
	if err != nil || res.ExitCode != 0 || !slices.Equal(res.Log, []string{"pw ***"}) {
		t.Fatalf("prepare: %v, exit %d, log %q", err, res.ExitCode, res.Log)
	}
	r.PrependPath = []string{"/opt/tools"}
	res, err = r.CleanupJob(ctx)
	// The two streams are read apart, as the runner reads them: their
	// lines may come in either order.
	got := slices.Clone(res.Log)
	slices.Sort(got)
	if err != nil || len(got) != 2 || !strings.HasPrefix(got[0], "PATH=/opt/tools:") || got[1] != "still ***" {
		t.Fatalf("cleanup: %v, log %q", err, res.Log)
	}
	if len(r.Log.Lines) != 3 {
		t.Errorf("job log %q", r.Log.Lines)
	}
}

// A response whose state is not an object fails, as the runner's
// HookResponse.State (a JObject) cannot hold it.
func TestResponseStateMustBeObject(t *testing.T) {
	script := `in=$(cat)
printf '{"state":"pod-1"}' > "$(printf '%s' "$in" | sed 's/.*"responseFile":"\([^"]*\)".*/\1/')"
`
	r := scriptedRunner(t, script)
	if _, err := r.CleanupJob(context.Background()); err == nil || !strings.Contains(err.Error(), "not an object") {
		t.Errorf("a string state: %v", err)
	}
	if r.State != nil {
		t.Errorf("state kept: %s", r.State)
	}
}

// prepare_job's response is checked as ContainerHookManager.cs reads it:
// a null context is fine, null services or a service without ports fail.
func TestPrepareResponseChecks(t *testing.T) {
	for _, tc := range []struct{ response, wantErr string }{
		{`{"isAlpine":false}`, ""},
		{`{"isAlpine":false,"context":null}`, ""},
		{`{"isAlpine":false,"context":{"container":{"id":"x"}}}`, ""},
		{`{"isAlpine":false,"context":{"services":[]}}`, ""},
		{`{"context":{"services":[]}}`, "isAlpine"},
		{`{"isAlpine":false,"context":{"services":null}}`, "services is null"},
		{`{"isAlpine":false,"context":{"services":[{"ports":null}]}}`, "more services"},
	} {
		script := "in=$(cat)\nprintf '%s' '" + tc.response + "' > \"$(printf '%s' \"$in\" | sed 's/.*\"responseFile\":\"\\([^\"]*\\)\".*/\\1/')\"\n"
		r := scriptedRunner(t, script)
		res, err := r.PrepareJob(context.Background(), "busybox", nil, nil)
		switch {
		case res.ExitCode != 0:
			t.Fatalf("%s: exit %d, stderr %s", tc.response, res.ExitCode, res.Stderr)
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.response, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: %v, want an error with %q", tc.response, err, tc.wantErr)
		}
	}
	// A service's ports null fails even when the count matches.
	script := "in=$(cat)\nprintf '%s' '{\"isAlpine\":true,\"context\":{\"services\":[{\"ports\":null}]}}' > \"$(printf '%s' \"$in\" | sed 's/.*\"responseFile\":\"\\([^\"]*\\)\".*/\\1/')\"\n"
	r := scriptedRunner(t, script)
	if _, err := r.PrepareJob(context.Background(), "busybox", nil, []map[string]any{Container("redis", nil, nil)}); err == nil || !strings.Contains(err.Error(), "no ports object") {
		t.Errorf("a service with null ports: %v", err)
	}
}

// A hook a signal ended exits 128 + the signal, as .NET reports it.
func TestExitCodeOfSignal(t *testing.T) {
	r := scriptedRunner(t, "cat >/dev/null\nkill -TERM $$\n")
	res, err := r.CleanupJob(context.Background())
	if err != nil || res.ExitCode != 128+15 {
		t.Errorf("exit %d (%v), want 143", res.ExitCode, err)
	}
}
