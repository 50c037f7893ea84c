package runnerapi

import (
	"os"
	"path/filepath"
	"testing"
)

// The job response's cache, artifacts and dependencies, in the runner's
// field names, decide whether its stage scripts call RunnerCommand.
func TestCachesAndArtifacts(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{}`, ""},
		{`{"cache": [], "artifacts": [], "dependencies": []}`, ""},
		{`{"cache": [{"key": "k", "paths": [], "untracked": false, "policy": "pull-push"}]}`, ""},
		{`{"cache": [{"key": "k", "paths": ["vendor/"]}]}`, "caches"},
		{`{"cache": [{"key": "k", "untracked": true}]}`, "caches"},
		{`{"artifacts": [{"name": "a", "paths": [], "when": "on_success"}]}`, ""},
		{`{"artifacts": [{"name": "a", "paths": ["out/"], "when": "on_success", "artifact_type": "archive"}]}`, "artifacts"},
		{`{"artifacts": [{"exclude": ["*.o"]}]}`, "artifacts"},
		{`{"artifacts": [{"untracked": true}]}`, "artifacts"},
		{`{"dependencies": [{"id": 5, "name": "build", "token": "t", "artifacts_file": {"filename": "", "size": 0}}]}`, ""},
		{`{"dependencies": [{"id": 5, "name": "build", "token": "t", "artifacts_file": {"filename": "artifacts.zip", "size": 120}}]}`, "artifacts"},
		{`{"cache": [{"paths": ["c/"]}], "dependencies": [{"artifacts_file": {"filename": "artifacts.zip"}}]}`, "caches and artifacts"},
	} {
		p := filepath.Join(t.TempDir(), "job.json")
		if err := os.WriteFile(p, []byte(tc.json), 0o600); err != nil {
			t.Fatal(err)
		}
		j, err := ReadJob(func(string) string { return p })
		if err != nil {
			t.Fatal(err)
		}
		if got := j.CachesAndArtifacts(); got != tc.want {
			t.Errorf("%s: CachesAndArtifacts() = %q, want %q", tc.json, got, tc.want)
		}
	}
}
