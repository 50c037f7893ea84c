package dockertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tether-ci/tether/internal/testing/testbin"
)

// modulePath identifies the repository's go.mod.
const modulePath = "module github.com/tether-ci/tether\n"

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

// LoadImages loads the Tether images NAME (tether-shim, tether, busybox,
// bash, ...) into the engine from bin/images/NAME.tar and returns the
// references they were loaded as. A missing tarball is built with
// scripts/build-images.sh, and the tether-shim and tether images are always
// rebuilt (from the working tree: cached compiles, a few seconds), so the
// shim under test is the current one.
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
		out, err := e.Podman(ctx, "load", "-q", "-i", filepath.Join(ImageDir(root), name+".tar"))
		if err != nil {
			return nil, fmt.Errorf("load image %s: %w", name, err)
		}
		ref, err := loadedRef(string(out))
		if err != nil {
			return nil, fmt.Errorf("load image %s: %w", name, err)
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// loadedRef returns the reference `podman load` reports ("Loaded image: REF").
func loadedRef(out string) (string, error) {
	var refs []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		for _, prefix := range []string{"Loaded image: ", "Loaded image(s): "} {
			if r, ok := strings.CutPrefix(l, prefix); ok {
				refs = append(refs, r)
			}
		}
	}
	if len(refs) != 1 {
		return "", fmt.Errorf("podman load reported %d images, want 1: %q", len(refs), out)
	}
	return refs[0], nil
}

// ensureTarballs builds the missing tarballs and the project's images, under
// a lock so that test packages running in parallel do not build at the same
// time.
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
		if name == "tether-shim" || name == "tether" || !fileExists(filepath.Join(ImageDir(root), name+".tar")) {
			build = append(build, name)
		}
	}
	if len(build) == 0 {
		return nil
	}
	return run(ctx, root, filepath.Join(root, "scripts", "build-images.sh"), build...)
}

// ImageDir is where the unit tests' images are built (TETHER_IMAGE_OUT of
// scripts/build-images.sh): apart from bin/images, which `make e2e` builds
// with its own tag and imports into the e2e node, so neither rewrites the
// other's archives.
func ImageDir(root string) string {
	return filepath.Join(root, "bin", "unit-images")
}

// run runs a command in dir with the default image tag.
func run(ctx context.Context, dir, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TETHER_IMAGE_TAG=dev", "TETHER_IMAGE_OUT="+ImageDir(dir), "PATH="+filepath.Dir(goTool())+":"+os.Getenv("PATH"))
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %v: %w: %s", name, args, err, b)
	}
	return nil
}
