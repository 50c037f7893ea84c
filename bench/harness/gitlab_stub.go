package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tether-ci/tether/integration/gitlab/stage"
)

// stubAgent listens where a job's stage agent would and answers every
// stage with exit code 0 as soon as its request came: `tether-stage`
// against it costs its own part of a stage alone (start, connect, request,
// relay, exit), without the agent's work.
type stubAgent struct {
	ln  net.Listener
	env []string
}

// newStubAgent starts a stub agent for a job of its own (job ID id) under
// dir; env is the environment of the job's stage processes.
func newStubAgent(dir string, base []string, id int64) (*stubAgent, error) {
	env := append(append([]string{}, base...), "TMPDIR="+dir, fmt.Sprintf("CUSTOM_ENV_CI_JOB_ID=%d", id))
	getenv := func(k string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if key, v, ok := strings.Cut(env[i], "="); ok && key == k {
				return v
			}
		}
		return ""
	}
	jobDir, err := stage.Dir(getenv)
	if err != nil {
		return nil, err
	}
	if err := stage.MakeDir(jobDir); err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", filepath.Join(jobDir, stage.SocketName))
	if err != nil {
		return nil, fmt.Errorf("the stub agent: %w", err)
	}
	s := &stubAgent{ln: ln, env: env}
	go s.serve()
	return s, nil
}

func (s *stubAgent) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			if typ, _, err := stage.ReadFrame(c); err == nil && typ == stage.FrameRequest {
				_ = stage.WriteFrame(c, stage.FrameExit, []byte("0"))
			}
			_, _, _ = stage.ReadFrame(c) // until the stage process is gone
		}()
	}
}

func (s *stubAgent) close() { _ = s.ln.Close() }

// run runs `bin SCRIPT STAGE` against the stub and returns how long the
// process took, start to exit.
func (s *stubAgent) run(ctx context.Context, bin string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "/nonexistent/script", "step_script")
	cmd.Env = s.env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%s against the stub agent: %w: %s", bin, err, tailOf([]byte(stderr.String()), 600))
	}
	return time.Since(start), nil
}

// stubDir is a directory for a stub agent's socket: short, as a unix
// socket's path must be.
func stubDir() (string, error) {
	return os.MkdirTemp("", "tsb")
}
