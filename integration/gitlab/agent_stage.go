package gitlab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tether-ci/tether/integration/gitlab/stage"
)

// requestWait bounds how long a connection to the agent may take to say
// what it wants.
const requestWait = 5 * time.Second

// cancelCause is a stage's cancellation cause in the agent: the signal
// the stage process received, worded as `tether gitlab run` words it.
type cancelCause string

func (c cancelCause) Error() string { return "received " + string(c) }

// errStageProcessGone cancels a stage whose process ended before it (the
// runner killed it): the agent must not run a stage nobody waits for.
var errStageProcessGone = errors.New("the stage's process ended (killed by the runner)")

// serve answers one connection: a stage, or cleanup's quit.
func (a *agent) serve(ctx context.Context, c *net.UnixConn) {
	_ = c.SetReadDeadline(time.Now().Add(requestWait))
	typ, payload, err := stage.ReadFrame(c)
	if err != nil {
		return
	}
	read := time.Now()
	_ = c.SetReadDeadline(time.Time{})
	switch typ {
	case stage.FrameQuit:
		a.quitOnce.Do(func() { close(a.quit) })
		_ = stage.WriteFrame(c, stage.FrameExit, []byte("0"))
	case stage.FrameRequest:
		var req stage.Request
		if err := req.UnmarshalBinary(payload); err != nil {
			_ = stage.WriteFrame(c, stage.FrameDecline, []byte("bad request: "+err.Error()))
			return
		}
		a.one.Lock()
		defer a.one.Unlock()
		select {
		case <-a.quit:
			_ = stage.WriteFrame(c, stage.FrameDecline, []byte("the agent is ending"))
			return
		default:
		}
		a.activity <- true
		defer func() { a.activity <- false }()
		a.stage(ctx, c, req, newStageClock(read))
	}
}

// stage runs one stage for the stage process at c: Run with its
// arguments and environment and the agent's Kubernetes connection. The
// stage's settings must use the agent's connection; otherwise, and when
// its arguments do not parse, the agent declines and the stage process
// runs `tether gitlab run` itself (which then reports any error).
func (a *agent) stage(ctx context.Context, c *net.UnixConn, req stage.Request, clock *stageClock) {
	env := envOf(req.Env)
	var cfg Settings
	pos, err := a.parse(&cfg, req.Args, env)
	clock.mark(stepSettings)
	switch {
	case err != nil:
		_ = stage.WriteFrame(c, stage.FrameDecline, []byte(err.Error()))
		return
	case len(pos) != 2:
		_ = stage.WriteFrame(c, stage.FrameDecline, []byte("want the script and the stage"))
		return
	case !a.kube.serves(&cfg):
		_ = stage.WriteFrame(c, stage.FrameDecline, []byte("the stage's kubeconfig, context or namespace differ from the agent's"))
		return
	}
	if !filepath.IsAbs(pos[0]) && req.Dir != "" {
		pos[0] = filepath.Join(req.Dir, pos[0])
	}
	cfg.kube, cfg.spares, cfg.readJob, cfg.clock = a.kube, a.spares, a.readJob, clock
	cfg.stageStarted = func(job string, from int64) {
		_ = stage.WriteEncoded(c, stage.FrameStarted, stage.Started{Job: job, From: from})
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// The stage process's cancel (its SIGTERM), or its end (SIGKILL),
	// cancels the stage in band.
	go func() {
		for {
			typ, payload, err := stage.ReadFrame(c)
			if err != nil {
				cancel(errStageProcessGone)
				return
			}
			if typ == stage.FrameCancel {
				cancel(cancelCause(payload))
			}
		}
	}()
	stdout := stage.FrameWriter{W: c, Type: stage.FrameStdout}
	stderr := stage.FrameWriter{W: c, Type: stage.FrameStderr}
	code := Command(ctx, &cfg, env, "run", pos, discardErrors{stdout}, discardErrors{stderr})
	_ = stage.WriteFrame(c, stage.FrameExit, []byte(strconv.Itoa(code)))
	clock.mark(stepExit)
	if a.log.Enabled(ctx, slog.LevelDebug) {
		attrs := append([]slog.Attr{slog.String("stage", pos[1]), slog.Int("code", code), slog.Duration("took", time.Since(clock.start))}, clock.attrs()...)
		a.log.LogAttrs(ctx, slog.LevelDebug, "stage served", attrs...)
	}
}

// discardErrors is a writer that reports every write as done: a stage
// whose process is gone still runs to its (cancelled) end.
type discardErrors struct{ w stage.FrameWriter }

func (d discardErrors) Write(p []byte) (int, error) {
	_, _ = d.w.Write(p)
	return len(p), nil
}

// envOf looks keys up in environ (KEY=VALUE, the last one wins).
func envOf(environ []string) Env {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return func(k string) string { return m[k] }
}

// cancelledBefore is ctx, cancelled at once when the stage process that
// fell back to this one had received the runner's signal already
// (stage.CancelledVar).
func cancelledBefore(ctx context.Context, env Env) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	if sig := env(stage.CancelledVar); sig != "" {
		cancel(cancelCause(sig))
	}
	return ctx, func() { cancel(nil) }
}

// resumeOf parses stage.ResumeVar: the job the agent began for this
// stage, where its records start and how much of its stdout was written.
func resumeOf(env Env) (job string, from, skip int64, ok bool, err error) {
	v := env(stage.ResumeVar)
	if v == "" {
		return "", 0, 0, false, nil
	}
	if _, err := fmt.Sscanf(v, "%s %d %d", &job, &from, &skip); err != nil || job == "" || from < 0 || skip < 0 {
		return "", 0, 0, false, fmt.Errorf("%s=%q: want JOB FROM SKIP", stage.ResumeVar, v)
	}
	return job, from, skip, true, nil
}
