package dockerengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// ContainerConfig is the body of a container create call (the subset of the
// Engine API's ContainerConfig that Tether uses).
type ContainerConfig struct {
	// Image is the image reference.
	Image string `json:"Image"`
	// Entrypoint and Cmd are the container's command: Entrypoint followed
	// by Cmd; nil keeps the image's.
	Entrypoint []string `json:"Entrypoint,omitempty"`
	Cmd        []string `json:"Cmd,omitempty"`
	// Env adds "NAME=value" variables to the image's.
	Env []string `json:"Env,omitempty"`
	// Labels are the container's labels.
	Labels map[string]string `json:"Labels,omitempty"`
	// User and WorkingDir override the image's.
	User       string `json:"User,omitempty"`
	WorkingDir string `json:"WorkingDir,omitempty"`
	// AttachStdin, AttachStdout and AttachStderr say which streams a
	// `docker start -a` style attach gets.
	AttachStdin  bool `json:"AttachStdin"`
	AttachStdout bool `json:"AttachStdout"`
	AttachStderr bool `json:"AttachStderr"`
	// OpenStdin gives the container a stdin; StdinOnce closes it when the
	// first attached client detaches.
	OpenStdin bool `json:"OpenStdin"`
	StdinOnce bool `json:"StdinOnce"`
	// Tty runs the container on a pseudo-terminal (no stdout/stderr
	// multiplexing then).
	Tty bool `json:"Tty"`
	// HostConfig is the host-dependent part.
	HostConfig HostConfig `json:"HostConfig"`
}

// HostConfig is the host-dependent part of a container create call.
type HostConfig struct {
	// Binds are bind mounts, "host-path:container-path[:options]".
	Binds []string `json:"Binds,omitempty"`
	// NetworkMode is "none", "host", a network name, or "" for the
	// engine's default.
	NetworkMode string `json:"NetworkMode,omitempty"`
	// Ulimits are resource limits; nil keeps the engine's defaults.
	Ulimits []Ulimit `json:"Ulimits,omitempty"`
	// AutoRemove makes the engine remove the container when it stops.
	AutoRemove bool `json:"AutoRemove,omitempty"`
}

// Ulimit is one resource limit of a container ("nofile", "nproc", …).
type Ulimit struct {
	// Name is the limit's name without RLIMIT_, lower case.
	Name string `json:"Name"`
	// Soft and Hard are the soft and hard limits.
	Soft int64 `json:"Soft"`
	Hard int64 `json:"Hard"`
}

// State is a container's state as inspect reports it.
type State struct {
	// Status is created, running, paused, exited, … (Podman also says
	// stopped).
	Status string `json:"Status"`
	// Running reports whether the container's init process runs.
	Running bool `json:"Running"`
	// ExitCode is the init process's exit status once it stopped.
	ExitCode int `json:"ExitCode"`
	// Error is the engine's error starting or running the container.
	Error string `json:"Error"`
	// OOMKilled reports a kill by the out-of-memory killer.
	OOMKilled bool `json:"OOMKilled"`
	// StartedAt and FinishedAt are RFC 3339 times.
	StartedAt  string `json:"StartedAt"`
	FinishedAt string `json:"FinishedAt"`
}

// CreateContainer creates a container (named name unless name is "") and
// returns its ID.
func (c *Client) CreateContainer(ctx context.Context, name string, cfg ContainerConfig) (string, error) {
	q := url.Values{}
	if name != "" {
		q.Set("name", name)
	}
	var out struct {
		ID       string   `json:"Id"`
		Warnings []string `json:"Warnings"`
	}
	if err := c.doJSON(ctx, http.MethodPost, "/containers/create", q, cfg, &out); err != nil {
		if IsNotFound(err) {
			return "", fmt.Errorf("create a container of image %s: the image is not in the engine's image store: "+
				"build or load it first (for Tether's own images: make images, then docker load -i / podman load -i bin/images/NAME.tar): %w", cfg.Image, err)
		}
		return "", fmt.Errorf("create a container of image %s: %w", cfg.Image, err)
	}
	if out.ID == "" {
		return "", fmt.Errorf("create a container of image %s: the engine returned no container ID", cfg.Image)
	}
	return out.ID, nil
}

// StartContainer starts a created container.
func (c *Client) StartContainer(ctx context.Context, id string) error {
	if err := c.doJSON(ctx, http.MethodPost, "/containers/"+url.PathEscape(id)+"/start", nil, nil, nil); err != nil {
		return fmt.Errorf("start container %s: %w", ShortID(id), err)
	}
	return nil
}

// InspectContainer returns a container's state.
func (c *Client) InspectContainer(ctx context.Context, id string) (State, error) {
	var out struct {
		State State `json:"State"`
	}
	if err := c.doJSON(ctx, http.MethodGet, "/containers/"+url.PathEscape(id)+"/json", nil, nil, &out); err != nil {
		return State{}, fmt.Errorf("inspect container %s: %w", ShortID(id), err)
	}
	return out.State, nil
}

// WaitContainer waits until a container stops and returns its exit code.
func (c *Client) WaitContainer(ctx context.Context, id string) (int, error) {
	var out struct {
		StatusCode int `json:"StatusCode"`
	}
	if err := c.doJSON(ctx, http.MethodPost, "/containers/"+url.PathEscape(id)+"/wait", nil, nil, &out); err != nil {
		return 0, fmt.Errorf("wait for container %s: %w", ShortID(id), err)
	}
	return out.StatusCode, nil
}

// RemoveContainer removes a container (force: even if it runs) and its
// anonymous volumes. A container that is already gone is not an error.
// Engine errors are retried a few times: removing a container that is
// exiting at that moment fails on Podman ("container state improper").
func (c *Client) RemoveContainer(ctx context.Context, id string, force bool) error {
	q := url.Values{"v": {"1"}}
	if force {
		q.Set("force", "1")
	}
	delay := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := c.doJSON(ctx, http.MethodDelete, "/containers/"+url.PathEscape(id), q, nil, nil)
		if err == nil || IsNotFound(err) {
			return nil
		}
		var ae *APIError
		if attempt == removeAttempts || !errors.As(err, &ae) || ae.StatusCode < 409 {
			return fmt.Errorf("remove container %s: %w", ShortID(id), err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("remove container %s: %w (after: %w)", ShortID(id), context.Cause(ctx), err)
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

// removeAttempts bounds RemoveContainer's retries (about 5 s in all).
const removeAttempts = 8

// CopyFromContainer returns a tar stream of path in a container (which need
// not be running). The caller closes it.
func (c *Client) CopyFromContainer(ctx context.Context, id, path string) (io.ReadCloser, error) {
	resp, err := c.do(ctx, http.MethodGet, "/containers/"+url.PathEscape(id)+"/archive", url.Values{"path": {path}}, "", nil)
	if err != nil {
		return nil, fmt.Errorf("copy %s out of container %s: %w", path, ShortID(id), err)
	}
	return resp.Body, nil
}

// CopyToContainer extracts the tar stream archive into the existing
// directory dir of a container (which need not be running).
func (c *Client) CopyToContainer(ctx context.Context, id, dir string, archive io.Reader) error {
	resp, err := c.do(ctx, http.MethodPut, "/containers/"+url.PathEscape(id)+"/archive", url.Values{"path": {dir}}, "application/x-tar", archive)
	if err != nil {
		return fmt.Errorf("copy files into %s of container %s: %w", dir, ShortID(id), err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// ShortID abbreviates a container ID for messages.
func ShortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// ImageID returns the ID (content digest) of an image in the engine's store.
func (c *Client) ImageID(ctx context.Context, ref string) (string, error) {
	var out struct {
		ID string `json:"Id"`
	}
	// Image references keep their slashes: the API routes /images/{name}/json
	// with a name that may contain them.
	if err := c.doJSON(ctx, http.MethodGet, "/images/"+ref+"/json", nil, nil, &out); err != nil {
		if IsNotFound(err) {
			return "", fmt.Errorf("image %s is not in the engine's image store: build or load it first "+
				"(for Tether's own images: make images, then docker load -i / podman load -i bin/images/NAME.tar): %w", ref, err)
		}
		return "", fmt.Errorf("inspect image %s: %w", ref, err)
	}
	if out.ID == "" {
		return "", fmt.Errorf("inspect image %s: the engine returned no image ID", ref)
	}
	return out.ID, nil
}

// Summary is one entry of ListContainers.
type Summary struct {
	// ID is the container's ID.
	ID string `json:"Id"`
	// Names are the container's names, each with a leading slash.
	Names []string `json:"Names"`
	// Image is the image reference it was created from.
	Image string `json:"Image"`
	// State is running, exited, … as in State.Status.
	State string `json:"State"`
	// Labels are the container's labels.
	Labels map[string]string `json:"Labels"`
}

// ListContainers lists the containers (running or not) that carry every
// label in labels ("key=value", or "key" for any value).
func (c *Client) ListContainers(ctx context.Context, labels ...string) ([]Summary, error) {
	q := url.Values{"all": {"1"}}
	if len(labels) > 0 {
		f, err := json.Marshal(map[string][]string{"label": labels})
		if err != nil {
			return nil, fmt.Errorf("list containers: %w", err)
		}
		q.Set("filters", string(f))
	}
	var out []Summary
	if err := c.doJSON(ctx, http.MethodGet, "/containers/json", q, nil, &out); err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	return out, nil
}
