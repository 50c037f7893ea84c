package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/tether-ci/tether/client"

	"github.com/tether-ci/tether/internal/dockerengine"
)

// writerCommand copies the exec session's stdin into the shim's command
// FIFO, one write per line, using the shim binary itself (`tether-shim
// send`), so the job image needs no shell for it. A last line without a
// newline is dropped, which is what the shim does with a torn command anyway.
var writerCommand = []string{ShimPath, "send", CommandsPath}

// Connect opens a connection to the shim: it implements client.Transport.
// Reading the connection reads a fresh stdout-only attach to the container;
// writing it writes the stdin of a fresh exec session that copies into the
// shim's command FIFO. Neither touches the container's own stdin, so a
// connection can break and be replaced any number of times, on Docker and
// Podman alike. Connect returns an error wrapping client.ErrShimGone when
// the container no longer runs or no longer exists.
func (ct *Container) Connect(ctx context.Context) (client.Conn, error) {
	st, err := ct.c.e.InspectContainer(ctx, ct.id)
	if err != nil {
		if dockerengine.IsNotFound(err) {
			return nil, fmt.Errorf("container %s no longer exists: %w: %w", dockerengine.ShortID(ct.id), client.ErrShimGone, err)
		}
		return nil, err
	}
	if !st.Running {
		return nil, fmt.Errorf("%s: %w", describeStopped(ct.id, st), client.ErrShimGone)
	}
	out, err := ct.c.e.Attach(ctx, ct.id, false, ct.diag)
	if err != nil {
		return nil, err
	}
	in, err := ct.c.e.Exec(ctx, ct.id, writerCommand, ct.diag)
	if err != nil {
		out.Close()
		return nil, err
	}
	cn := &conn{out: out, in: in}
	go cn.watchWriter(ct.diag)
	return cn, nil
}

// describeStopped says why a container is not running.
func describeStopped(id string, st dockerengine.State) string {
	msg := fmt.Sprintf("container %s is %s (exit code %d)", dockerengine.ShortID(id), st.Status, st.ExitCode)
	if st.Error != "" {
		msg += ": " + st.Error
	}
	if st.OOMKilled {
		msg += " (killed: out of memory)"
	}
	if st.ExitCode == 126 || st.ExitCode == 127 {
		msg += " (could the shim not start? see its diagnostics above)"
	}
	return msg
}

// conn is one client connection: an attach for the shim's output and an
// exec session for its commands.
type conn struct {
	out *dockerengine.Stream // stdout-only attach to the container
	in  *dockerengine.Stream // the command writer's exec session

	closeOnce sync.Once
	closeErr  error
}

// Read reads the shim's stdout.
func (c *conn) Read(p []byte) (int, error) { return c.out.Read(p) }

// Write sends command bytes to the shim.
func (c *conn) Write(p []byte) (int, error) { return c.in.Write(p) }

// Close ends both streams; the container keeps running.
func (c *conn) Close() error {
	c.closeOnce.Do(func() { c.closeErr = errors.Join(c.out.Close(), c.in.Close()) })
	return c.closeErr
}

// watchWriter drains the writer session's own output (normally none) into
// diag and closes the whole connection when the session ends, so a reader
// notices a connection that can no longer carry commands.
func (c *conn) watchWriter(diag io.Writer) {
	if diag == nil {
		diag = io.Discard
	}
	_, _ = io.Copy(diag, c.in)
	_ = c.Close()
}

// Wait waits until the container stops and returns its exit code (the
// shim's).
func (ct *Container) Wait(ctx context.Context) (int, error) {
	return ct.c.e.WaitContainer(ctx, ct.id)
}

// Remove removes the container, stopping it first if it still runs.
func (ct *Container) Remove(ctx context.Context) error {
	return ct.c.e.RemoveContainer(ctx, ct.id, true)
}

// Container returns the job container id (started earlier, possibly by
// another process) as a client.Transport, for example to follow a job after
// a runner restart. diag receives the shim's stderr; nil discards it.
func (c *Client) Container(id string, diag io.Writer) *Container {
	return &Container{c: c, id: id, diag: diag}
}
