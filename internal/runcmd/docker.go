package runcmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/docker"
	"github.com/tether-ci/tether/internal/cmdutil"
)

// runDocker runs job in a docker/podman container (client/docker): the
// scripts are copied into a container of --image whose init is the shim
// (from --helper-image, or the --shim binary when given), the session
// attaches through the Docker Engine API at DOCKER_HOST, and the container
// is removed afterwards unless --keep.
func runDocker(ctx context.Context, f *Flags, job client.Job, stdout, stderr io.Writer) int {
	log := f.Logger
	if f.Image == "" {
		return UsageErr(stderr, "--docker needs --image IMAGE (an image with a shell for the scripts, e.g. %s)", "localhost/tether/busybox:dev")
	}
	scripts, main, after, err := containerScripts(job.Scripts, job.After)
	if err != nil {
		log.Error("cannot read the scripts", "err", err)
		return cmdutil.ExitUsage
	}
	dc, err := docker.NewClient("")
	if err != nil {
		log.Error("cannot use the docker backend", "err", err)
		return cmdutil.ExitTether
	}
	defer dc.Close()
	if err := dc.Ping(ctx); err != nil {
		log.Error("cannot use the docker backend", "err", err)
		return cmdutil.ExitTether
	}
	if job.ID == "" {
		job.ID = client.NewJobID("job")
	}
	job.Scripts, job.After = main, after
	spec := docker.Spec{
		Image:       f.Image,
		HelperImage: f.HelperImage,
		ShimBinary:  f.Shim,
		ShimCache:   shimCacheDir(),
		Name:        "tether-" + job.ID,
		Scripts:     scripts,
		Env:         f.Env,
		Labels:      map[string]string{docker.LabelJob: job.ID},
		Deadline:    f.Timeout,
		IdleTimeout: f.IdleTimeout,
		TTY:         f.TTY,
		Logger:      log,
		ShimArgs:    []string{"--after-timeout=" + f.AfterTimeout.String()},
	}
	if !f.Quiet {
		spec.Diagnostics = stderr
	}
	ct, err := dc.StartJob(ctx, spec)
	if err != nil {
		log.Error("cannot start the job container", "err", err)
		return cmdutil.ExitTether
	}
	log.Info("job container started", "container", spec.Name, "image", f.Image, "engine", dc.Host())
	remove := func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := ct.Remove(rctx); err != nil {
			log.Warn("removing the job container", "container", spec.Name, "err", err)
		}
	}
	if f.Keep {
		defer log.Info("kept the job container (--keep); remove it with `docker rm -f`", "container", spec.Name, "id", ct.ID())
	} else {
		defer remove()
		unregister := cmdutil.OnForce(ctx, remove)
		defer unregister()
	}
	var begun scriptsBegun
	opts := client.Options{
		Output:   stdout,
		Events:   begun.events(cmdutil.Progress(log)),
		Logger:   log,
		ExitShim: true,
	}
	f.OutputLimit.Apply(&opts)
	f.applyStderr(&opts)
	res, err := client.Run(ctx, ct, job, opts)

	cmdutil.Report(log, res, err, jobAttrs(job, f.Start, res, begun.list())...)
	return cmdutil.ExitCode(res, err)
}

// containerScripts reads the job's script files and names them for the
// container: the base name, prefixed with its position when two different
// files share a base name. It returns the files and the job's main and
// after-script paths inside the container. A file given twice is copied
// once.
func containerScripts(mainPaths, afterPaths []string) (files []docker.Script, main, after []string, err error) {
	byPath := map[string]string{} // host path → container path
	used := map[string]bool{}
	place := func(p string) (string, error) {
		if cp, ok := byPath[p]; ok {
			return cp, nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return "", fmt.Errorf("read script: %w", err)
		}
		base := filepath.Base(p)
		name := base
		for i := len(files) + 1; used[name]; i++ {
			name = strconv.Itoa(i) + "-" + base
		}
		used[name] = true
		files = append(files, docker.Script{Name: name, Data: data})
		byPath[p] = docker.ScriptPath(name)
		return byPath[p], nil
	}
	for _, p := range mainPaths {
		cp, err := place(p)
		if err != nil {
			return nil, nil, nil, err
		}
		main = append(main, cp)
	}
	for _, p := range afterPaths {
		cp, err := place(p)
		if err != nil {
			return nil, nil, nil, err
		}
		after = append(after, cp)
	}
	return files, main, after, nil
}

// shimCacheDir is where shims copied out of helper images are kept:
// ${TETHER_CACHE:-$XDG_CACHE_HOME/tether}/shims, or "" (no cache) when there
// is no cache directory.
func shimCacheDir() string {
	base := os.Getenv("TETHER_CACHE")
	if base == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(d, "tether")
	}
	return filepath.Join(base, "shims")
}
