package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tether-ci/tether/internal/contract"

	"github.com/tether-ci/tether/internal/dockerengine"
)

// DefaultHelperImage is the image the shim is copied from by default: the
// project's published shim-only image tagged with this build's version.
func DefaultHelperImage() string { return contract.DefaultHelperImage() }

// Labels put on every container Tether creates.
const (
	// LabelManagedBy is set to ManagedByValue on every container and volume.
	LabelManagedBy = contract.LabelManagedBy
	// ManagedByValue is the LabelManagedBy value.
	ManagedByValue = contract.ManagedByValue
	// LabelJob carries the job ID.
	LabelJob = contract.LabelJob
)

// Spec describes a job container.
type Spec struct {
	// Image is the image the scripts run in; it needs a shell. Required.
	Image string
	// HelperImage holds the static shim at /tether-shim. Default
	// DefaultHelperImage. Unused when ShimBinary is set.
	HelperImage string
	// ShimBinary, if set, is the path of a static tether-shim binary on
	// this machine to put into the container instead of the helper image's
	// (for trying a freshly built shim without rebuilding images).
	ShimBinary string
	// ShimCache, if set, is a directory where the shim copied out of the
	// helper image is kept per image ID, so later jobs skip the copy.
	ShimCache string
	// Name names the container; "" lets the engine pick a name.
	Name string
	// Scripts are placed under ScriptDir (see ScriptPath).
	Scripts []Script
	// Env is the container's environment, "NAME=value" each. Names
	// starting with ShimEnvPrefix are refused: they configure tether-shim.
	Env []string
	// Labels are added to the container's labels (LabelManagedBy is always
	// set).
	Labels map[string]string
	// User overrides the image's user ("uid[:gid]" or a name).
	User string
	// NetworkMode is the container's network ("none", "host", a network
	// name); "" keeps the engine's default.
	NetworkMode string
	// Deadline makes the shim stop the job and exit this long after it
	// started (its --deadline); 0 means no deadline.
	Deadline time.Duration
	// IdleTimeout makes the shim exit when no script ran and no command or
	// ping came for this long (its --idle-timeout), so a container whose
	// client died ends; 0 means never.
	IdleTimeout time.Duration
	// TTY runs the scripts under a pseudo-terminal inside the container
	// (the shim's --tty), for tools that colour or animate only on one.
	TTY bool
	// ShimArgs are extra shim flags.
	ShimArgs []string
	// Ulimits are the container's resource limits. nil keeps the engine's
	// defaults, and if the engine cannot apply them (rootful Podman without
	// CAP_SYS_RESOURCE: "error setting rlimit") retries once with limits
	// within this process's own (see FallbackUlimits), which the Client
	// then uses for its later jobs right away.
	Ulimits []Ulimit
	// Diagnostics receives the shim's stderr (its own log lines, never job
	// output); nil discards it.
	Diagnostics io.Writer
	// Logger receives the backend's diagnostics; nil discards them.
	Logger *slog.Logger
}

// Container is a started job container whose init process is the shim. It
// implements client.Transport.
type Container struct {
	c    *Client
	id   string
	diag io.Writer
}

// ID returns the container's ID.
func (ct *Container) ID() string { return ct.id }

// ShimEnvPrefix starts the names of the environment variables that
// configure tether-shim (TETHER_SHELL, TETHER_GRACE, …).
const ShimEnvPrefix = "TETHER_"

// StartJob creates and starts a job container as described in the package
// documentation. On failure nothing is left behind.
func (c *Client) StartJob(ctx context.Context, spec Spec) (*Container, error) {
	if spec.Image == "" {
		return nil, errors.New("start a job container: Spec.Image is empty")
	}
	for _, kv := range spec.Env {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, ShimEnvPrefix) {
			return nil, fmt.Errorf("start a job container: variable %s: names starting with %s are reserved: they configure tether-shim", name, ShimEnvPrefix)
		}
	}
	if spec.HelperImage == "" {
		spec.HelperImage = DefaultHelperImage()
	}
	log := spec.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	images := []string{spec.Image}
	if spec.ShimBinary == "" {
		images = append(images, spec.HelperImage)
	}
	for _, ref := range images {
		if err := c.ensureImage(ctx, ref, log); err != nil {
			return nil, fmt.Errorf("start a job container: %w", err)
		}
	}
	var shim []byte
	var err error
	if spec.ShimBinary != "" {
		shim, err = os.ReadFile(spec.ShimBinary)
	} else {
		shim, err = c.shimFromHelperCached(ctx, spec.HelperImage, spec.ShimCache)
	}
	if err != nil {
		return nil, fmt.Errorf("start a job container: %w", err)
	}
	archive, err := jobArchive(shim, spec.Scripts)
	if err != nil {
		return nil, fmt.Errorf("start a job container: %w", err)
	}
	cfg := containerConfig(spec)
	if spec.Ulimits == nil && c.needUlimits.Load() {
		cfg.HostConfig.Ulimits = dockerengine.FallbackUlimits()
	}
	id, err := c.createAndStart(ctx, spec.Name, cfg, archive)
	if err != nil && cfg.HostConfig.Ulimits == nil && strings.Contains(err.Error(), "rlimit") {
		c.needUlimits.Store(true)
		cfg.HostConfig.Ulimits = dockerengine.FallbackUlimits()
		// Known and harmless (rootful Podman without CAP_SYS_RESOURCE):
		// not worth more than a debug line.
		log.Debug("the engine cannot apply its default resource limits; retrying with explicit ulimits",
			"error", err, "ulimits", fmt.Sprint(cfg.HostConfig.Ulimits))
		id, err = c.createAndStart(ctx, spec.Name, cfg, archive)
	}
	if err != nil {
		return nil, fmt.Errorf("start a job container of image %s: %w", spec.Image, err)
	}
	log.Debug("job container started", "id", dockerengine.ShortID(id), "image", spec.Image)
	return &Container{c: c, id: id, diag: spec.Diagnostics}, nil
}

// containerConfig builds the create call for spec.
func containerConfig(spec Spec) dockerengine.ContainerConfig {
	args := []string{"--spool-dir=" + SpoolDir}
	if spec.Deadline > 0 {
		args = append(args, "--deadline="+strconv.FormatInt(int64((spec.Deadline+time.Second-1)/time.Second), 10))
	}
	if spec.IdleTimeout > 0 {
		args = append(args, "--idle-timeout="+spec.IdleTimeout.String())
	}
	if spec.TTY {
		args = append(args, "--tty")
	}
	args = append(args, spec.ShimArgs...)
	labels := map[string]string{}
	maps.Copy(labels, spec.Labels)
	labels[LabelManagedBy] = ManagedByValue
	return dockerengine.ContainerConfig{
		Image: spec.Image,
		// The shim is PID 1 and reads its commands from the FIFO (opened
		// read-write, so it never sees EOF when a writer goes).
		Entrypoint:   []string{ShimPath, "--commands=" + CommandsPath},
		Cmd:          args,
		Env:          spec.Env,
		Labels:       labels,
		User:         spec.User,
		AttachStdout: true,
		AttachStderr: true,
		Tty:          false,
		HostConfig: dockerengine.HostConfig{
			NetworkMode: spec.NetworkMode,
			Ulimits:     spec.Ulimits,
		},
	}
}

// createAndStart creates a container, uploads the job archive into it and
// starts it; on failure it removes the container again.
func (c *Client) createAndStart(ctx context.Context, name string, cfg dockerengine.ContainerConfig, archive []byte) (id string, err error) {
	id, err = c.e.CreateContainer(ctx, name, cfg)
	if err != nil {
		return "", err
	}
	defer func() {
		if err == nil {
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if rerr := c.e.RemoveContainer(rctx, id, true); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	if err := c.e.CopyToContainer(ctx, id, "/", bytes.NewReader(archive)); err != nil {
		return id, err
	}
	if err := c.e.StartContainer(ctx, id); err != nil {
		return id, err
	}
	return id, nil
}
