package actionsrunner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A local action is read from the runner's own workspace, as
// ActionManager.cs reads it: none there is the runner's error; then each
// kind becomes the hook command the runner sends (a composite action's
// run: steps, a JavaScript action's node with its script's container path,
// a docker:// action's image, a Dockerfile action's runner-host path).
func TestRunLocal(t *testing.T) {
	r := scriptedRunner(t, `cat >> "$RUNNER_TEMP/inputs"`)
	ctx := context.Background()
	if _, err := r.RunLocal(ctx, LocalStep{Path: "./.github/actions/x"}); err == nil || !strings.Contains(err.Error(), "Can't find 'action.yml', 'action.yaml' or 'Dockerfile' under '") {
		t.Fatalf("no action: %v", err)
	}
	ws := filepath.Join(r.Work, "repo", "repo")
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(ws, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/comp/action.yml", "runs:\n  using: composite\n  steps:\n    - run: echo one\n      shell: bash\n    - run: echo two\n      shell: bash\n")
	write("a/js/action.yaml", "inputs:\n  who: {default: world}\nruns:\n  using: node20\n  main: dist/index.js\n")
	write("a/img/action.yml", "runs:\n  using: docker\n  image: docker://busybox:1\n  entrypoint: sh\n  args: [-c, echo hi]\n")
	write("a/built/Dockerfile", "FROM scratch\n")

	if res, err := r.RunLocal(ctx, LocalStep{Path: "./a/comp"}); err != nil || len(res) != 2 {
		t.Fatalf("composite: %v, %d results", err, len(res))
	}
	if _, err := r.RunLocal(ctx, LocalStep{Path: "./a/js"}); err == nil || !strings.Contains(err.Error(), "dist/index.js") {
		t.Fatalf("javascript without its script on the runner's disk: %v", err)
	}
	write("a/js/dist/index.js", "")
	for _, p := range []string{"./a/js", "./a/img", "./a/built"} {
		if res, err := r.RunLocal(ctx, LocalStep{Path: p}); err != nil || len(res) != 1 {
			t.Fatalf("%s: %v, %d results", p, err, len(res))
		}
	}
	b, err := os.ReadFile(filepath.Join(r.Temp, "inputs"))
	if err != nil {
		t.Fatal(err)
	}
	var cmds []struct {
		Command string
		Args    map[string]any
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var c struct {
			Command string
			Args    map[string]any
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	if len(cmds) != 5 {
		t.Fatalf("%d hook calls, want 5", len(cmds))
	}
	env := func(i int) map[string]any { return cmds[i].Args["environmentVariables"].(map[string]any) }
	if cmds[0].Command != "run_script_step" || env(0)["GITHUB_ACTION_PATH"] != "/__w/repo/repo/a/comp" {
		t.Errorf("composite step: %+v", cmds[0])
	}
	if cmds[2].Args["entryPoint"] != "/__e/node20/bin/node" || env(2)["INPUT_WHO"] != "world" ||
		cmds[2].Args["entryPointArgs"].([]any)[0] != `"/__w/repo/repo/a/js/dist/index.js"` {
		t.Errorf("javascript step: %+v", cmds[2])
	}
	if cmds[3].Command != "run_container_step" || cmds[3].Args["image"] != "busybox:1" || cmds[3].Args["entryPoint"] != "sh" {
		t.Errorf("docker:// step: %+v", cmds[3])
	}
	if cmds[4].Args["image"] != nil || cmds[4].Args["dockerfile"] != filepath.Join(ws, "a", "built", "Dockerfile") {
		t.Errorf("Dockerfile step: %+v", cmds[4])
	}
}
