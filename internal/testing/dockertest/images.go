package dockertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/tether-ci/tether/internal/testing/testbin"
)

// modulePath identifies the repository's go.mod.
const modulePath = "module github.com/tether-ci/tether\n"

// ImageRef returns the reference of the Tether image NAME
// (localhost/tether/NAME:dev), as scripts/build-images.sh tags it.
func ImageRef(name string) string { return "localhost/tether/" + name + ":dev" }

// RepoRoot returns the repository's root: the nearest directory above the
// working directory whose go.mod declares the Tether module.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte(modulePath)) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the tether repository (no go.mod of github.com/tether-ci/tether above the working directory)")
		}
		dir = parent
	}
}

// goTool returns the go command: the one on PATH, else the usual install
// location.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if p := "/usr/local/go/bin/go"; fileExists(p) {
		return p
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// BuildShim builds tether-shim from the working tree, static, into dir and
// returns its path.
func BuildShim(ctx context.Context, dir string) (string, error) {
	return testbin.BuildStatic(ctx, dir, "tether-shim", testbin.Shim)
}

// LoadImages loads the Tether images NAME (helper, busybox, bash) into the
// engine from bin/images/NAME.tar. A missing tarball is built with
// scripts/build-images.sh, and so is a helper image whose binaries differ
// from bin/tether-shim and bin/tether (which `make build` writes; they are
// built first when missing). It returns the images' references.
func (e *Engine) LoadImages(ctx context.Context, names ...string) ([]string, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	if err := ensureTarballs(ctx, root, names); err != nil {
		return nil, err
	}
	refs := make([]string, 0, len(names))
	for _, name := range names {
		if _, err := e.Podman(ctx, "load", "-q", "-i", filepath.Join(root, "bin", "images", name+".tar")); err != nil {
			return nil, fmt.Errorf("load image %s: %w", name, err)
		}
		refs = append(refs, ImageRef(name))
	}
	return refs, nil
}

// ensureTarballs builds the missing or stale tarballs, under a lock so that
// test packages running in parallel do not build at the same time.
func ensureTarballs(ctx context.Context, root string, names []string) error {
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "tether-build-images.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("lock the image build: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock the image build: %w", err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()

	var build []string
	for _, name := range names {
		tarball := filepath.Join(root, "bin", "images", name+".tar")
		st, err := os.Stat(tarball)
		switch {
		case err != nil:
			build = append(build, name)
		case name == "helper" && !helperCurrent(root, st.ModTime()):
			build = append(build, name)
		}
	}
	if len(build) == 0 {
		return nil
	}
	for _, name := range build {
		if name != "helper" {
			continue
		}
		if !fileExists(filepath.Join(root, "bin", "tether-shim")) || !fileExists(filepath.Join(root, "bin", "tether")) {
			if err := run(ctx, root, "make", "build"); err != nil {
				return err
			}
		}
	}
	return run(ctx, root, filepath.Join(root, "scripts", "build-images.sh"), build...)
}

// helperCurrent reports whether the helper tarball (modified at built)
// holds the binaries now in bin/: the copies build-images.sh left in the
// build context bin/images/ctx/helper are identical to them and not newer
// than the tarball.
func helperCurrent(root string, built time.Time) bool {
	for _, b := range []string{"tether-shim", "tether"} {
		cur, err := os.ReadFile(filepath.Join(root, "bin", b))
		if err != nil {
			return false
		}
		ctxPath := filepath.Join(root, "bin", "images", "ctx", "helper", b)
		st, err := os.Stat(ctxPath)
		if err != nil || st.ModTime().After(built) {
			return false
		}
		used, err := os.ReadFile(ctxPath)
		if err != nil || !bytes.Equal(cur, used) {
			return false
		}
	}
	return true
}

// run runs a command in dir with the default image tag.
func run(ctx context.Context, dir, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TETHER_IMAGE_TAG=dev", "PATH="+filepath.Dir(goTool())+":"+os.Getenv("PATH"))
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %v: %w: %s", name, args, err, b)
	}
	return nil
}
