package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/tether-ci/tether/internal/dockerengine"
)

// Paths inside a job container.
const (
	// Dir holds everything Tether puts into a job container.
	Dir = "/tether"
	// ShimPath is the shim binary, the container's entrypoint.
	ShimPath = Dir + "/bin/tether-shim"
	// ScriptDir holds the job's scripts.
	ScriptDir = Dir + "/scripts"
	// CommandsPath is the FIFO the shim reads its commands from (its
	// stdin); each connection writes into it through an exec session.
	CommandsPath = Dir + "/commands"
	// SpoolDir is the shim's replay spool (world-writable, sticky, so a
	// non-root image user can write it).
	SpoolDir = Dir + "/spool"
)

// helperShimPath is where the helper image keeps the static shim.
const helperShimPath = "/tether-shim"

// Script is a script file placed into the job container.
type Script struct {
	// Name is the file name under ScriptDir; it may not contain a slash.
	Name string
	// Data is the script's content.
	Data []byte
}

// ScriptPath returns the path a script named name has inside the container.
func ScriptPath(name string) string { return ScriptDir + "/" + name }

// shimFromHelper copies the shim binary out of the helper image: it creates
// a container of the image (never started), reads the file through the
// archive endpoint, and removes the container.
func (c *Client) shimFromHelper(ctx context.Context, image string) (data []byte, err error) {
	id, err := c.e.CreateContainer(ctx, "", dockerengine.ContainerConfig{
		Image:      image,
		Entrypoint: []string{helperShimPath},
		Cmd:        []string{"version"},
		Labels:     map[string]string{LabelManagedBy: ManagedByValue},
	})
	if err != nil {
		return nil, fmt.Errorf("copy the shim out of helper image %s: %w", image, err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if rerr := c.e.RemoveContainer(rctx, id, true); rerr != nil && err == nil {
			err = fmt.Errorf("copy the shim out of helper image %s: %w", image, rerr)
		}
	}()
	rc, err := c.e.CopyFromContainer(ctx, id, helperShimPath)
	if err != nil {
		return nil, fmt.Errorf("copy the shim out of helper image %s: %w", image, err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("copy the shim out of helper image %s: the archive of %s holds no regular file (is it a Tether helper image?)", image, helperShimPath)
		}
		if err != nil {
			return nil, fmt.Errorf("copy the shim out of helper image %s: read archive: %w", image, err)
		}
		if h.Typeflag != tar.TypeReg || path.Base(h.Name) != path.Base(helperShimPath) {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("copy the shim out of helper image %s: read archive: %w", image, err)
		}
		return data, nil
	}
}

// jobArchive returns a tar stream to extract at "/" of a job container: the
// shim, the scripts, the command FIFO and the spool directory.
func jobArchive(shim []byte, scripts []Script) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	dir := func(name string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, ModTime: now})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: now}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	rel := func(p string) string { return strings.TrimPrefix(p, "/") }
	err := errors.Join(
		dir(rel(Dir), 0o755),
		dir(rel(path.Dir(ShimPath)), 0o755),
		file(rel(ShimPath), 0o755, shim),
		dir(rel(ScriptDir), 0o755),
		dir(rel(SpoolDir), 0o1777),
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeFifo, Name: rel(CommandsPath), Mode: 0o666, ModTime: now}),
	)
	if err != nil {
		return nil, fmt.Errorf("build the job archive: %w", err)
	}
	seen := map[string]bool{}
	for _, s := range scripts {
		if s.Name == "" || strings.Contains(s.Name, "/") || s.Name == "." || s.Name == ".." {
			return nil, fmt.Errorf("build the job archive: script name %q must be a plain file name", s.Name)
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("build the job archive: two scripts are named %q", s.Name)
		}
		seen[s.Name] = true
		if err := file(rel(ScriptPath(s.Name)), 0o755, s.Data); err != nil {
			return nil, fmt.Errorf("build the job archive: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("build the job archive: %w", err)
	}
	return buf.Bytes(), nil
}
