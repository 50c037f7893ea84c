package gitlab

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/tether-ci/tether/client/kube"
	gitlab "github.com/tether-ci/tether/integration/gitlab/internal/runnerapi"
	"github.com/tether-ci/tether/integration/gitlab/stage"
	"github.com/tether-ci/tether/internal/cmdutil"
)

// Env looks up an environment variable of the runner's process, "" when
// it is unset: os.Getenv, or a map's lookup in a test. The driver reads
// the runner's contract from it (JOB_RESPONSE_FILE, the exit codes,
// CUSTOM_ENV_* job variables) and nothing else.
type Env func(string) string

// CommandArgs reports whether name is one of the driver's commands, as
// Command takes them, and how many positional arguments it takes (run:
// the script's path and the stage).
func CommandArgs(name string) (n int, ok bool) {
	switch name {
	case "config", "prepare", "cleanup", "agent":
		return 0, true
	case "run":
		return 2, true
	}
	return 0, false
}

// SystemFailure is the exit code the runner takes for an infrastructure
// failure (SYSTEM_FAILURE_EXIT_CODE in env).
func SystemFailure(env Env) int {
	return gitlab.ReadExitCodes(env).SystemFailure
}

// Command runs the driver command name (config, prepare, run, cleanup)
// with its positional arguments args (run: SCRIPT STAGE; CommandArgs
// says how many) and returns the runner's exit code. It opens the driver's
// structured log the settings ask for (LogSettings) around the command;
// the four functions it calls can be called directly as well.
func Command(ctx context.Context, cfg *Settings, env Env, name string, args []string, stdout, stderr io.Writer) int {
	codes := gitlab.ReadExitCodes(env)
	n, ok := CommandArgs(name)
	if !ok {
		fmt.Fprintf(stderr, "tether gitlab: unknown command %q: want config, prepare, run or cleanup\n", name)
		return codes.SystemFailure
	}
	if len(args) != n {
		fmt.Fprintf(stderr, "tether gitlab %s: want %d arguments, got %d\n", name, n, len(args))
		return codes.SystemFailure
	}
	// The driver's own structured log, only where a setting asks for it:
	// by default the job log gets plain sentences alone.
	log, closeLog, err := cfg.openLog(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "ERROR: tether gitlab %s: %v\n", name, err)
		return codes.SystemFailure
	}
	defer func() {
		if err := closeLog(); err != nil {
			fmt.Fprintf(stderr, "WARNING: tether gitlab %s: log-file: %v\n", name, err)
		}
	}()
	cfg.log = log.With("command", name, "job", gitlab.Env(env, "CI_JOB_ID"))
	switch name {
	case "config":
		return Config(cfg, env, stdout, stderr)
	case "prepare":
		started := cfg.startAgent(env)
		code := Prepare(ctx, cfg, env, stdout)
		started.finish(code == 0)
		return code
	case "run":
		if cfg.spares == nil && env(stage.FallbackVar) == "" {
			// run_exec is `tether gitlab run` itself, not tether-stage:
			// the agent prepare started would idle until cleanup.
			quitAgent(env, cfg.logger())
		}
		ctx, cancel := cancelledBefore(ctx, env)
		defer cancel()
		return Run(ctx, cfg, env, args[0], args[1], stdout, stderr)
	case "agent":
		return Agent(ctx, cfg, env)
	default:
		stopAgent(env, cfg.logger())
		return Cleanup(ctx, cfg, env, stderr)
	}
}

// logger is the driver's structured log: Command's, else none.
func (f *Settings) logger() *slog.Logger {
	if f.log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return f.log
}

// gitlabPod returns the job's pod (its container: the build container),
// a transport maker for a container of it, and the API server's address.
func gitlabPod(cfg *Settings, env Env, log *slog.Logger) (*kube.Pod, func(kube.TransportOptions) *kube.Transport, string, error) {
	kc := cfg.kube
	if kc == nil || !kc.serves(cfg) {
		// The process's own connection routes client-go's klog. One given
		// in cfg.kube (the stage agent's) is routed by its owner: klog's
		// logger is process-wide, and the agent's other attaches log
		// through it while a stage starts.
		cmdutil.RouteKlog(log)
		var err error
		if kc, err = newKubeConn(cfg); err != nil {
			return nil, nil, "", err
		}
	}
	rc, ns, cs := kc.rc, kc.ns, kc.cs
	name, err := gitlab.PodName(env)
	if err != nil {
		return nil, nil, "", err
	}
	pod := &kube.Pod{Client: cs, Namespace: ns, Name: name, Container: kube.BuildContainer, Logger: log}
	return pod, func(o kube.TransportOptions) *kube.Transport { return pod.Transport(rc, o) }, rc.Host, nil
}
