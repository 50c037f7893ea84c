package gitlab

import (
	"encoding/json"
	"fmt"
	"io"

	gitlab "github.com/tether-ci/tether/integration/gitlab/internal/runnerapi"
	"github.com/tether-ci/tether/internal/version"
)

// Config is config_exec: it prints to stdout the JSON the runner reads
// (builds_dir, cache_dir, hostname: the job's pod name, shell, driver)
// and returns 0, or SYSTEM_FAILURE_EXIT_CODE when it cannot write it.
func Config(cfg *Settings, env Env, stdout, stderr io.Writer) int {
	codes := gitlab.ReadExitCodes(env)
	name, err := gitlab.PodName(env)
	if err != nil {
		name = ""
	}
	out := map[string]any{
		"builds_dir": cfg.BuildsDir, "cache_dir": cfg.CacheDir, "builds_dir_is_shared": false,
		"hostname": name, "shell": "bash",
		"driver": map[string]string{"name": "tether", "version": version.Get()},
	}
	if err := json.NewEncoder(stdout).Encode(out); err != nil {
		fmt.Fprintf(stderr, "tether gitlab config: %v\n", err)
		return codes.SystemFailure
	}
	return 0
}
