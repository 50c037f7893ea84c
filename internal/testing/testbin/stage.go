package testbin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// BuildStage builds tether-stage, GitLab's run_exec, to dir/tether-stage
// as `make build` does (scripts/build-stage.sh): the C build when a C
// compiler is found, which CI (CI=true) requires, else the Go build. It
// returns the binary's path.
func BuildStage(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("find the module's root: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	bin := filepath.Join(dir, "tether-stage")
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "build-stage.sh"), "build", bin, runtime.GOOS, runtime.GOARCH, "dev")
	cmd.Env = os.Environ()
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build tether-stage: %w: %s", err, b)
	}
	return bin, nil
}
