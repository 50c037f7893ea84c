package runcmd

import (
	"context"
	"io"
	"strconv"
	"syscall"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/local"
	"github.com/tether-ci/tether/internal/cmdutil"
)

// runLocal runs job with tether-shim as a child process.
func runLocal(ctx context.Context, f *Flags, job client.Job, stdout, stderr io.Writer) int {
	log := f.Logger
	path, err := local.FindShim(f.Shim)
	if err != nil {
		log.Error("cannot run the local backend", "err", err)
		return cmdutil.ExitTether
	}
	var args []string
	if f.Timeout > 0 {
		args = append(args, "--deadline="+strconv.FormatInt(int64((f.Timeout+999_999_999)/1e9), 10))
	}
	args = append(args, "--after-timeout="+f.AfterTimeout.String())
	if f.TTY {
		args = append(args, "--tty")
	}
	if f.IdleTimeout > 0 {
		args = append(args, "--idle-timeout="+f.IdleTimeout.String())
	}
	// The memory window suffices for a connection that is only replaced
	// after a stall, and spares writing every record to a spool file.
	cfg := local.Config{Shim: path, Args: args, Env: envOrNil(f.Env), MemoryReplay: true}
	if !f.Quiet {
		// Through a pipe tether copies, never our own stderr descriptor: a
		// shim still stopping after a forced exit must not hold the
		// caller's stderr open.
		cfg.Stderr = struct{ io.Writer }{stderr}
		if f.Format == "json" {
			cfg.Stderr = &cmdutil.LineLogger{Log: log, Source: "tether-shim"}
		}
	}
	shim, err := local.Start(ctx, cfg)
	if err != nil {
		log.Error("cannot start the local shim", "err", err)
		return cmdutil.ExitTether
	}
	defer func() {
		if err := shim.Close(); err != nil {
			log.Warn("stopping the local shim", "err", err)
		}
	}()
	remove := cmdutil.OnForce(ctx, func() { _ = syscall.Kill(shim.Pid(), syscall.SIGTERM) })
	defer remove()
	var begun scriptsBegun
	opts := client.Options{
		Output:   stdout,
		Events:   begun.events(cmdutil.Progress(log)),
		Logger:   log,
		ExitShim: true,
	}
	f.OutputLimit.Apply(&opts)
	f.applyStderr(&opts)
	res, err := client.Run(ctx, shim, job, opts)

	cmdutil.Report(log, res, err, jobAttrs(job, f.Start, res, begun.list())...)
	return cmdutil.ExitCode(res, err)
}

// envOrNil returns the shim's environment: this process's plus the --env
// variables, or nil (inherit) when there are none.
func envOrNil(extra []string) []string {
	if len(extra) == 0 {
		return nil
	}
	return append(syscall.Environ(), extra...)
}
