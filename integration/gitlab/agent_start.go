package gitlab

import (
	"bufio"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tether-ci/tether/integration/gitlab/stage"
)

// agentReadyWait bounds how long prepare waits, after the pod runs, for
// the agent it started to listen: a first stage without one still runs.
const agentReadyWait = 5 * time.Second

// agentStopWait bounds how long cleanup waits for the agent to end.
const agentStopWait = 5 * time.Second

// agentStart is an agent prepare started.
type agentStart struct {
	cmd   *exec.Cmd
	ready *os.File
	log   *slog.Logger
}

// startAgent starts the job's stage agent (AgentCommand), detached in a
// session of its own with no standard streams, when the settings ask for
// one: it loads its configuration while prepare creates the pod. An agent
// of an earlier prepare of the same job is stopped first. nil when none
// was started (why is logged).
func (f *Settings) startAgent(env Env) *agentStart {
	if !agentSupported || !f.StageAgent || len(f.AgentCommand) == 0 {
		return nil
	}
	log := f.logger()
	stopAgent(env, log)
	r, w, err := os.Pipe()
	if err != nil {
		log.Warn("cannot start the stage agent; stages run without it", "err", err)
		return nil
	}
	defer w.Close()
	cmd := exec.Command(f.AgentCommand[0], f.AgentCommand[1:]...)
	cmd.Env = append(os.Environ(), agentReadyVar+"=3", agentRunnerVar+"="+strconv.Itoa(os.Getppid()))
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := startDetached(cmd); err != nil {
		_ = r.Close()
		log.Warn("cannot start the stage agent; stages run without it", "err", err)
		return nil
	}
	return &agentStart{cmd: cmd, ready: r, log: log}
}

// finish waits for the agent to listen when prepare succeeded, and stops
// it when prepare failed (or the agent did not get ready).
func (s *agentStart) finish(ok bool) {
	if s == nil {
		return
	}
	defer s.ready.Close()
	if ok {
		_ = s.ready.SetReadDeadline(time.Now().Add(agentReadyWait))
		line, err := bufio.NewReader(s.ready).ReadString('\n')
		if strings.TrimSpace(line) == "ready" {
			s.log.Debug("stage agent ready", "pid", s.cmd.Process.Pid)
			_ = s.cmd.Process.Release()
			return
		}
		s.log.Warn("the stage agent did not start; stages run without it", "said", strings.TrimSpace(line), "err", err)
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// stopAgent ends the job's stage agent, if one runs, and removes its
// directory: cleanup's, and prepare's before it starts one.
func stopAgent(env Env, log *slog.Logger) {
	dir, asked := askQuit(env)
	if dir == "" {
		return
	}
	if asked {
		// The agent removes its directory as it ends.
		for deadline := time.Now().Add(agentStopWait); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
				return
			}
		}
		log.Warn("the stage agent did not end in time", "dir", dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		log.Warn("cannot remove the stage agent's directory", "dir", dir, "err", err)
	}
}

// quitAgent asks the job's stage agent, if one runs, to end, without
// waiting for it: `tether gitlab run` as the runner's run_exec, whose
// stages never reach an agent.
func quitAgent(env Env, log *slog.Logger) {
	if dir, asked := askQuit(env); asked {
		log.Debug("the stage agent was asked to end: run_exec is tether gitlab run", "dir", dir)
	}
}

// askQuit sends the job's agent cleanup's quit and reads its answer. dir
// is the job's agent directory ("" when there is none of this user's);
// asked says whether an agent listened there.
func askQuit(env Env) (dir string, asked bool) {
	if !agentSupported {
		return "", false
	}
	dir, err := stage.Dir(env)
	if err != nil || stage.CheckDir(dir) != nil {
		return "", false
	}
	c, err := net.DialTimeout("unix", filepath.Join(dir, stage.SocketName), time.Second)
	if err != nil {
		return dir, false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(agentStopWait))
	if stage.WriteFrame(c, stage.FrameQuit, nil) == nil {
		_, _, _ = stage.ReadFrame(c)
	}
	return dir, true
}
