package gitlab_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tether-ci/tether/integration/gitlab"
)

// A runner calls the driver in process: the settings from a command line
// (and the config file it names), the runner's environment as a lookup,
// the job log as writers. Here the job names no image and the settings
// give no default, so prepare fails, as a system failure, before it
// touches a cluster.
func Example() {
	dir, err := os.MkdirTemp("", "gitlab-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	job := filepath.Join(dir, "job.json")
	if err := os.WriteFile(job, []byte(`{"id": 5}`), 0o600); err != nil {
		panic(err)
	}
	runnerEnv := map[string]string{
		"JOB_RESPONSE_FILE":        job,
		"SYSTEM_FAILURE_EXIT_CODE": "42",
		"BUILD_FAILURE_EXIT_CODE":  "41",
		"CUSTOM_ENV_CI_RUNNER_ID":  "3",
		"CUSTOM_ENV_CI_JOB_ID":     "5",
	}
	env := func(name string) string { return runnerEnv[name] }

	var cfg gitlab.Settings
	if _, err := gitlab.Parse(&cfg, []string{"--builds-dir", "/work", "--gitlab-helper-image", "none"}, env); err != nil {
		panic(err)
	}

	var out bytes.Buffer
	code := gitlab.Config(&cfg, env, &out, os.Stderr)
	var config struct {
		BuildsDir string `json:"builds_dir"`
		Hostname  string `json:"hostname"`
	}
	if err := json.Unmarshal(out.Bytes(), &config); err != nil {
		panic(err)
	}
	fmt.Println("config:", code, config.BuildsDir, config.Hostname)

	code = gitlab.Prepare(context.Background(), &cfg, env, os.Stdout)
	fmt.Println("prepare:", code)
	// Output:
	// config: 0 /work tether-gitlab-r3-j5
	// ERROR: tether: the job names no image (image: in its .gitlab-ci.yml) and the driver config sets no default: set image: in a driver config file (--config FILE or $TETHER_CONFIG), or pass --image
	// prepare: 42
}
