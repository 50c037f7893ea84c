// Package docker is Tether's local-container backend: it runs a job's
// tether-shim as the init process of a container on a Docker Engine API
// endpoint (Docker itself, or Podman's `podman system service`) and reaches
// it through the engine's attach and exec endpoints.
//
// The package talks to the engine with a small net/http client of its own
// (API version 1.41, internal to this module, so not part of the API); it
// has no Docker SDK dependency. NewClient finds
// the engine as the docker CLI does: DOCKER_HOST (unix://PATH or
// tcp://HOST:PORT, with TLS from DOCKER_TLS_VERIFY and DOCKER_CERT_PATH),
// else the current docker context (DOCKER_CONTEXT, or currentContext in
// ~/.docker/config.json), else /var/run/docker.sock; a missing engine gives
// an error wrapping ErrNoEngine that says what to install or start.
//
// StartJob prepares and starts one job container:
//
//  0. The job image and the helper image are pulled when the engine does
//     not have them, as `docker run` does, with the pull's progress on
//     Spec.Logger.
//  1. The shim binary is copied out of the helper image through a created,
//     never started container of it (GET /containers/{id}/archive), so the
//     helper image needs no shell.
//  2. A container of the job's image is created without a TTY, with the
//     job's environment and labels. Its entrypoint is the shim (PID 1)
//     reading its commands from the FIFO /tether/commands
//     (`tether-shim --commands`), which it opens read-write.
//  3. The shim, the scripts (under /tether/scripts), the FIFO and a spool
//     directory are uploaded into it before it starts (PUT
//     /containers/{id}/archive), so nothing depends on the client and the
//     engine sharing a file system.
//  4. The container starts. If the engine cannot apply its default resource
//     limits (rootful Podman without CAP_SYS_RESOURCE fails with "error
//     setting rlimit"), the container is created once more with explicit
//     HostConfig.Ulimits within this process's own limits.
//
// The returned Container is a client.Transport, so the same session code as
// the Kubernetes backend runs the job. Each Connect opens a stdout-only
// attach (POST /containers/{id}/attach, a hijacked connection carrying
// multiplexed stdout/stderr frames) for the shim's records, and an exec
// session of `tether-shim send /tether/commands` whose stdin is copied into
// the command FIFO for the commands. The
// container's own stdin is not used because Podman closes it whenever an
// attach that included stdin ends (Docker keeps it open when StdinOnce is
// false): with the FIFO a broken connection is simply replaced and the
// session resumes. The shim's stderr (its diagnostics) goes to
// Spec.Diagnostics, never into the job's output. Container.Remove deletes
// the container.
package docker
