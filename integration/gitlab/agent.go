package gitlab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitlab "github.com/tether-ci/tether/integration/gitlab/internal/runnerapi"
	"github.com/tether-ci/tether/integration/gitlab/stage"
	"github.com/tether-ci/tether/internal/cmdutil"
)

// Environment variables the agent's starter (startAgent) sets for it.
const (
	// agentReadyVar names the agent's file descriptor on which it says
	// "ready" (or why not) and which it then closes.
	agentReadyVar = "TETHER_GITLAB_AGENT_READY"
	// agentRunnerVar is the runner's process ID: the agent ends when the
	// runner does.
	agentRunnerVar = "TETHER_GITLAB_AGENT_RUNNER"
)

// agentIdleDefault bounds an agent's life without stages when the
// settings' idle-timeout is 0 (pods that never end for idleness): the
// agent is only a shortcut, and a stage without one runs anyway.
const agentIdleDefault = time.Hour

// Agent is `tether gitlab agent`: the job's stage agent, which Command's
// prepare starts (detached, its own session) when the settings ask for
// one (StageAgent, AgentCommand). It keeps the Kubernetes connection cfg
// names and serves the job's stages on a unix socket in the job's private
// directory (stage.Dir): each stage is `tether gitlab run`'s Run with the
// stage process's arguments and environment, its output relayed over the
// socket. It ends at cleanup (stage.FrameQuit), when no stage came for the
// settings' idle-timeout (the pod's own idle end), when the runner's
// process ends, or on SIGTERM, removing the directory; it returns 0, or
// SYSTEM_FAILURE_EXIT_CODE when it could not start.
func Agent(ctx context.Context, cfg *Settings, env Env) int {
	log := cfg.logger()
	ready := readyPipe(env)
	fail := func(err error) int {
		log.Error("the stage agent cannot start; stages run without it", "err", err)
		if ready != nil {
			fmt.Fprintf(ready, "%v\n", err)
			_ = ready.Close()
		}
		return SystemFailure(env)
	}
	dir, err := stage.Dir(env)
	if err != nil {
		return fail(err)
	}
	cmdutil.RouteKlog(log)
	tuneAgentGC(env)
	kc, err := newKubeConn(cfg)
	if err != nil {
		return fail(err)
	}
	if err := stage.MakeDir(dir); err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, stage.SocketName)
	_ = os.Remove(sock) // a dead agent's (prepare stopped a live one)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return fail(fmt.Errorf("listen on the job's agent socket: %w", err))
	}
	ln.SetUnlinkOnClose(true)
	a := &agent{cfg: cfg, env: env, kube: kc, log: log, activity: make(chan bool, 1), quit: make(chan struct{})}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	a.spares = newSpareSet(ctx, log, func() { a.checkPod(ctx, stop) })
	defer a.spares.closeAll()
	if pid, err := strconv.Atoi(env(agentRunnerVar)); err == nil && pid > 1 {
		if err := watchRunner(ctx, pid, func() { stop(errRunnerGone) }); err != nil {
			log.Warn("cannot watch the runner's process; the agent ends at cleanup or when idle", "pid", pid, "err", err)
		}
	}
	go a.accept(ctx, ln)
	if ready != nil {
		fmt.Fprintln(ready, "ready")
		_ = ready.Close()
	}
	log.Info("stage agent serving", "socket", sock)
	why := a.wait(ctx)
	_ = ln.Close()
	a.stages.Wait()
	log.Info("stage agent ends", "reason", why)
	return 0
}

// errRunnerGone is why the agent stops when the runner's process ended.
var errRunnerGone = errors.New("the runner's process ended")

// readyPipe is the agent's readiness pipe, when its starter gave one.
func readyPipe(env Env) *os.File {
	fd, err := strconv.Atoi(env(agentReadyVar))
	if err != nil || fd < 3 {
		return nil
	}
	return os.NewFile(uintptr(fd), "agent-ready")
}

// agent is a running stage agent.
type agent struct {
	cfg  *Settings
	env  Env
	kube *kubeConn
	log  *slog.Logger
	// one is held by the stage that runs: a job's stages come one at a time.
	one sync.Mutex
	// parsed are the previous stage's settings (guarded by one).
	parsed *stageSettings
	// job is the previous stage's job response (guarded by one).
	job *jobResponse
	// stages counts the connections being served.
	stages sync.WaitGroup
	// spares are the attaches kept for the job's next stages.
	spares *spareSet
	// activity receives true when a stage begins and false when it ends.
	activity chan bool
	quit     chan struct{}
	quitOnce sync.Once
}

// wait returns why the agent ends: its context's cause, cleanup's quit,
// or no stage for the idle timeout.
func (a *agent) wait(ctx context.Context) string {
	idle := a.cfg.IdleTimeout
	if idle <= 0 {
		idle = agentIdleDefault
	}
	timer := time.NewTimer(idle)
	defer timer.Stop()
	running := 0
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx).Error()
		case <-a.quit:
			return "cleanup"
		case begun := <-a.activity:
			if begun {
				running++
				timer.Stop()
				continue
			}
			running--
			if running == 0 {
				timer.Reset(idle)
			}
		case <-timer.C:
			if running == 0 {
				return fmt.Sprintf("no stage for %s", idle)
			}
		}
	}
}

// accept serves the socket's connections until ln closes.
func (a *agent) accept(ctx context.Context, ln *net.UnixListener) {
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		if !samePeer(c) {
			_ = c.Close()
			continue
		}
		a.stages.Add(1)
		go func() {
			defer a.stages.Done()
			defer c.Close()
			a.serve(ctx, c)
		}()
	}
}

// samePeer reports whether the process at c's other end is this user's.
func samePeer(c *net.UnixConn) bool {
	uid, err := peerUID(c)
	return err == nil && uid == os.Getuid()
}

// errPodEnded is why the agent stops when the job's pod ended.
var errPodEnded = errors.New("the job's pod ended")

// checkPod reads the job's pod once a spare attach's stream ended while
// no stage used it, and stops the agent when the pod is gone or has
// ended: its shim exited, no stage can run there any more.
func (a *agent) checkPod(ctx context.Context, stop context.CancelCauseFunc) {
	if a.cfg.Pool != "" {
		return // a claimed warm pod has a name of its own
	}
	name, err := gitlab.PodName(a.env)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, requestWait)
	defer cancel()
	p, err := a.kube.cs.CoreV1().Pods(a.kube.ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return
	case p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed:
		return
	}
	stop(errPodEnded)
}
