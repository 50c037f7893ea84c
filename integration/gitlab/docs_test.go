package gitlab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	gitlab "github.com/tether-ci/tether/integration/gitlab/internal/runnerapi"
	"github.com/tether-ci/tether/internal/pool"
)

// docBlocks returns the fenced blocks of language lang in a Markdown file.
func docBlocks(t *testing.T, path, lang string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	var cur *strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case cur == nil && line == "```"+lang:
			cur = &strings.Builder{}
		case cur != nil && line == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	return blocks
}

// docs/gitlab.md's snippets work as written: its driver config sample is
// accepted key by key by `tether gitlab` (every key known, every value
// valid), its pools sample by `tether pool check`'s parser, its config.toml calls the four commands with one config file,
// and its RBAC commands apply the project's manifest.
func TestGitLabDocSnippets(t *testing.T) {
	const doc = "../../docs/gitlab.md"
	yamls := docBlocks(t, doc, "yaml")
	if len(yamls) != 2 {
		t.Fatalf("%d yaml blocks in %s, want the driver config sample and the pools file of warm pods", len(yamls), doc)
	}
	pools, err := pool.Parse("the pools sample", []byte(yamls[1]))
	if err != nil || pools[0].For != pool.ForGitLab {
		t.Errorf("the pools sample of %s: %v, %+v; want a valid pool for gitlab jobs", doc, err, pools)
	}
	cfg := filepath.Join(t.TempDir(), "tether.yaml")
	if err := os.WriteFile(cfg, []byte(yamls[0]), 0o600); err != nil {
		t.Fatal(err)
	}
	var f Settings
	if _, err := Parse(&f, []string{"--config", cfg}, func(string) string { return "" }); err != nil {
		t.Fatalf("the sample driver config of %s: %v", doc, err)
	}
	if f.Namespace != "gitlab-ci" || f.ShimFrom != "image" || len(f.Tolerations) != 1 {
		t.Errorf("the sample's values did not all arrive: %+v", f)
	}

	tomls := docBlocks(t, doc, "toml")
	if len(tomls) != 1 {
		t.Fatalf("%d toml blocks in %s, want config.toml", len(tomls), doc)
	}
	for _, stage := range []string{"config", "prepare", "cleanup"} {
		want := stage + `_args = ["gitlab", "` + stage + `", "--config", "/etc/gitlab-runner/tether.yaml"]`
		if !strings.Contains(tomls[0], stage+`_exec = "tether"`) || !strings.Contains(tomls[0], want) {
			t.Errorf("config.toml does not call %s as `tether gitlab %s --config FILE`:\n%s", stage, stage, tomls[0])
		}
	}
	// run_exec is tether-stage, with `tether gitlab run`'s arguments.
	if !strings.Contains(tomls[0], `run_exec = "tether-stage"`) || !strings.Contains(tomls[0], `run_args = ["--config", "/etc/gitlab-runner/tether.yaml"]`) {
		t.Errorf("config.toml does not call run as `tether-stage --config FILE`:\n%s", tomls[0])
	}
	if !f.StageAgent {
		t.Error("the sample driver config turns the stage agent off")
	}

	var sh strings.Builder
	for _, b := range docBlocks(t, doc, "sh") {
		sh.WriteString(b)
	}
	if !strings.Contains(sh.String(), gitlab.RBACFile+" | kubectl apply -f -") {
		t.Errorf("%s does not apply %s", doc, gitlab.RBACFile)
	}
	rbac, err := os.ReadFile("../../" + gitlab.RBACFile)
	if err != nil {
		t.Fatal(err)
	}
	// The sed of the doc replaces every namespace of the manifest.
	if n := strings.Count(string(rbac), "namespace: gitlab-ci"); n != strings.Count(string(rbac), "namespace:") || n == 0 {
		t.Errorf("%s: %d of %d namespaces are 'namespace: gitlab-ci', which the doc's sed replaces", gitlab.RBACFile, n, strings.Count(string(rbac), "namespace:"))
	}
}
