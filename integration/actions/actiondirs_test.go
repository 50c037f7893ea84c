package actions

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tether-ci/tether/integration/actions/hookapi"
)

// runnerWork lays out a runner's _work with _temp and returns RUNNER_TEMP
// and the _actions directory.
func runnerWork(t *testing.T) (temp, actions string) {
	t.Helper()
	work := t.TempDir()
	temp, actions = filepath.Join(work, "_temp"), filepath.Join(work, "_actions")
	for _, d := range []string{temp, actions} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return temp, actions
}

func writeFile(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// A JavaScript action's step delivers the action's whole directory (files
// with their modes, subdirectories, symlinks) once, checks the node of the
// externals, and names the directory for the state; a directory the state
// already lists is not delivered again.
func TestPlanStepDeliversActions(t *testing.T) {
	temp, actions := runnerWork(t)
	act := filepath.Join(actions, "octo", "hello", "v1")
	writeFile(t, filepath.Join(act, "action.yml"), "runs: {using: node20, main: index.js}\n", 0o644)
	writeFile(t, filepath.Join(act, "index.js"), "console.log('hi')\n", 0o644)
	writeFile(t, filepath.Join(act, "bin", "tool"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(actions, "octo", "hello", "v1.completed"), "", 0o644)
	if err := os.Symlink("bin/tool", filepath.Join(act, "tool")); err != nil {
		t.Fatal(err)
	}
	// A composite action's path, named only by GITHUB_ACTION_PATH.
	writeFile(t, filepath.Join(actions, "octo", "comp", "main", "run.sh"), "echo c\n", 0o755)
	args := &hookapi.ScriptStepArgs{
		EntryPoint:     "/__e/node20/bin/node",
		EntryPointArgs: []string{`"/__w/_actions/octo/hello/v1/index.js"`},
		EnvironmentVariables: map[string]string{
			"GITHUB_ACTION_PATH": "/__w/_actions/octo/comp/main",
		},
	}
	plan, err := planStep(args, temp, nil, t.Errorf)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/__w/_actions/octo/hello/v1", "/__w/_actions/octo/comp/main"}; !slices.Equal(plan.actions, want) {
		t.Fatalf("delivered actions %q, want %q", plan.actions, want)
	}
	modes := map[string]os.FileMode{}
	for _, f := range plan.job.Files[:len(plan.job.Files)-1] {
		modes[string(f.Content)] = f.Mode
	}
	if modes["#!/bin/sh\n"] != 0o755 || modes["console.log('hi')\n"] != 0o644 || modes["echo c\n"] != 0o755 {
		t.Errorf("delivered files and modes %v", modes)
	}
	wrapper := string(plan.job.Files[len(plan.job.Files)-1].Content)
	for _, want := range []string{
		"rm -rf '/__w/_actions/octo/hello/v1' && mkdir -p '/__w/_actions/octo/hello/v1'",
		"mkdir -p '/__w/_actions/octo/hello/v1/bin'",
		"ln -sfn 'bin/tool' '/__w/_actions/octo/hello/v1/tool'",
		"mv -f /tether/files/in-",
		" '/__w/_actions/octo/hello/v1/bin/tool' || fail ",
		" '/__w/_actions/octo/hello/v1/index.js' || fail ",
		"[ -x '/__e/node20/bin/node' ] || fail ",
		EnvExternalsImage,
		"exec '/__e/node20/bin/node' '/__w/_actions/octo/hello/v1/index.js'\n",
	} {
		if !strings.Contains(wrapper, want) {
			t.Errorf("wrapper lacks %q:\n%s", want, wrapper)
		}
	}
	if strings.Index(wrapper, "[ -x '/__e/node20/bin/node' ]") > strings.Index(wrapper, "exec ") {
		t.Error("the externals check comes after the exec")
	}

	// The post step of the same action: already delivered.
	again, err := planStep(args, temp, plan.actions, t.Errorf)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.actions) != 0 || len(again.job.Files) != 1 {
		t.Errorf("a delivered action was delivered again: actions %q, %d files", again.actions, len(again.job.Files))
	}
}

// A ref with a slash is found by the runner's download watermark.
func TestActionRefWithSlash(t *testing.T) {
	_, actions := runnerWork(t)
	writeFile(t, filepath.Join(actions, "octo", "x", "feature", "y", "dist", "index.js"), "", 0o644)
	writeFile(t, filepath.Join(actions, "octo", "x", "feature", "y.completed"), "", 0o644)
	dir, ok, err := actionRef(actions, "/__w/_actions/octo/x/feature/y/dist/index.js")
	if err != nil || !ok || dir != "/__w/_actions/octo/x/feature/y" {
		t.Fatalf("actionRef = %q, %v, %v", dir, ok, err)
	}
	for _, p := range []string{"/__w/_temp/a.sh", "/__w/_actions/octo", "-e", "/__w/_actionsx/a/b/c"} {
		if _, ok, err := actionRef(actions, p); ok || err != nil {
			t.Errorf("actionRef(%q) = %v, %v: want not an action", p, ok, err)
		}
	}
}

// Paths that climb out of the actions directory are refused, not
// followed.
func TestActionRefRefusesDotDot(t *testing.T) {
	temp, _ := runnerWork(t)
	for _, p := range []string{"/__w/_actions/../../etc/passwd", "/__w/_actions/a/b/../../../x", "/__w/_actions/a//b/c", "/__w/_actions/a/b/c/.."} {
		args := &hookapi.ScriptStepArgs{EntryPoint: "/__e/node20/bin/node", EntryPointArgs: []string{p}}
		if _, err := planStep(args, temp, nil, t.Errorf); err == nil || !strings.Contains(err.Error(), "must be clean") {
			t.Errorf("%s: err %v, want a refusal", p, err)
		}
	}
}

// An action above MaxActionSize is refused with a clear error, and a
// missing one says where it was looked for.
func TestActionSizeBoundAndMissing(t *testing.T) {
	temp, actions := runnerWork(t)
	big := filepath.Join(actions, "octo", "big", "v1", "blob")
	writeFile(t, big, "", 0o644)
	if err := os.Truncate(big, MaxActionSize+1); err != nil { // sparse: nothing read
		t.Fatal(err)
	}
	args := &hookapi.ScriptStepArgs{EntryPoint: "/__e/node20/bin/node", EntryPointArgs: []string{"/__w/_actions/octo/big/v1/index.js"}}
	if _, err := planStep(args, temp, nil, t.Errorf); err == nil || !strings.Contains(err.Error(), "more than 64 MiB") {
		t.Errorf("err %v, want the size bound", err)
	}
	args.EntryPointArgs = []string{"/__w/_actions/octo/gone/v1/index.js"}
	if _, err := planStep(args, temp, nil, t.Errorf); err == nil || !strings.Contains(err.Error(), "is not on the runner at "+filepath.Join(actions, "octo", "gone", "v1")) {
		t.Errorf("err %v, want the missing action named", err)
	}
}

// The state after a successful step adds the delivered directories once
// and keeps the pod.
func TestRecordActions(t *testing.T) {
	resp := filepath.Join(t.TempDir(), "resp.json")
	st := &hookapi.State{Pod: "p", Namespace: "n", Actions: []string{"/__w/_actions/a/b/c"}}
	if err := recordActions(st, []string{"/__w/_actions/a/b/c", "/__w/_actions/d/e/f"}, resp); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(resp)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"state":{"tetherPod":"p","tetherNamespace":"n","tetherActions":["/__w/_actions/a/b/c","/__w/_actions/d/e/f"]}}` + "\n"
	if string(b) != want || len(st.Actions) != 1 {
		t.Errorf("response %s, want %s (and the old state unchanged: %q)", b, want, st.Actions)
	}
}
