// Package dockertest runs a private Podman service that serves the Docker
// Engine API on a temporary unix socket, for tests of Tether's docker
// backend. The service has its own image store (vfs) and configuration:
// containers get no network by default (so tests never touch the host's
// networking) and the engine's default resource limits are left alone.
//
// Images come from the repository's one definition of each: the
// docker-archive tarballs bin/images/NAME.tar that `make images`
// (scripts/build-images.sh) writes; LoadImages builds the missing or stale
// ones with that script.
package dockertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-ci/tether/client/docker"
)

// containersConf configures the private service: no network unless a
// container asks for one, cgroupfs and file events (no systemd/journald
// needed), and no 5-minute linger of each exec session's conmon.
const containersConf = `[containers]
netns = "none"

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
exit_command_delay = 0
`

// Engine is a running private Podman service.
type Engine struct {
	// Host is the service's address for DOCKER_HOST ("unix://…").
	Host string
	// Socket is the service's unix socket path.
	Socket string

	dir    string
	podman string
	global []string // global podman flags selecting the private store
	env    []string
	svc    *exec.Cmd
	done   chan struct{}
	logf   string
}

// Unavailable ends the test for a missing dependency: it fails under CI
// (CI=true), where every dependency must be installed, and skips elsewhere.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and a dependency is missing: "+format, args...)
	}
	t.Skipf("skipped (not in CI): "+format, args...)
}

// ErrNoPodman is returned by Start when podman is not installed.
var ErrNoPodman = errors.New("podman is not installed (apt-get install podman)")

// StartT starts an engine for one test and stops it when the test ends. A
// missing podman ends the test through Unavailable.
func StartT(t testing.TB) *Engine {
	t.Helper()
	e, err := Start(context.Background())
	if errors.Is(err, ErrNoPodman) {
		Unavailable(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("stop the podman service: %v", err)
		}
	})
	return e
}

// Options tune StartWith.
type Options struct {
	// InsecureRegistries are registries ("127.0.0.1:PORT") the service
	// pulls from over plain HTTP.
	InsecureRegistries []string
}

// Start starts a private Podman service on a socket in a new temporary
// directory and waits until it answers. Close stops it.
func Start(ctx context.Context) (*Engine, error) {
	return StartWith(ctx, Options{})
}

// StartWith is Start with options.
func StartWith(ctx context.Context, opts Options) (*Engine, error) {
	podman, err := exec.LookPath("podman")
	if err != nil {
		return nil, ErrNoPodman
	}
	// A short path: unix socket paths are limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "tether-podman-")
	if err != nil {
		return nil, fmt.Errorf("start podman service: %w", err)
	}
	e := &Engine{
		Socket: filepath.Join(dir, "api.sock"),
		dir:    dir,
		podman: podman,
		global: []string{
			"--root", filepath.Join(dir, "root"),
			"--runroot", filepath.Join(dir, "run"),
			"--tmpdir", filepath.Join(dir, "tmp"),
			"--storage-driver", "vfs",
		},
		done: make(chan struct{}),
		logf: filepath.Join(dir, "service.log"),
	}
	e.Host = "unix://" + e.Socket
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o755); err != nil {
		return nil, fmt.Errorf("start podman service: %w", err)
	}
	conf := filepath.Join(dir, "containers.conf")
	if err := os.WriteFile(conf, []byte(containersConf), 0o644); err != nil {
		return nil, fmt.Errorf("start podman service: %w", err)
	}
	var regs strings.Builder
	for _, r := range opts.InsecureRegistries {
		fmt.Fprintf(&regs, "[[registry]]\nlocation = %q\ninsecure = true\n\n", r)
	}
	regConf := filepath.Join(dir, "registries.conf")
	if err := os.WriteFile(regConf, []byte(regs.String()), 0o644); err != nil {
		return nil, fmt.Errorf("start podman service: %w", err)
	}
	e.env = append(os.Environ(), "CONTAINERS_CONF="+conf, "CONTAINERS_REGISTRIES_CONF="+regConf, "TMPDIR="+filepath.Join(dir, "tmp"))
	logFile, err := os.Create(e.logf)
	if err != nil {
		return nil, fmt.Errorf("start podman service: %w", err)
	}
	defer logFile.Close()
	args := append(append([]string{}, e.global...), "system", "service", "--time=0", e.Host)
	e.svc = exec.Command(podman, args...)
	e.svc.Env = e.env
	e.svc.Stdout, e.svc.Stderr = logFile, logFile
	e.svc.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := e.svc.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start podman service: %w", err)
	}
	go func() {
		_ = e.svc.Wait()
		close(e.done)
	}()
	if err := e.waitReady(ctx, 60*time.Second); err != nil {
		_ = e.Close()
		return nil, err
	}
	return e, nil
}

// waitReady polls the API until it answers.
func (e *Engine) waitReady(ctx context.Context, limit time.Duration) error {
	c, err := docker.NewClient(e.Host)
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(limit)
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := c.Ping(pctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-e.done:
			return fmt.Errorf("podman service exited at start: %s", e.logTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("podman service did not answer within %v: %w; log: %s", limit, err, e.logTail())
		}
	}
}

// logTail returns the end of the service's log.
func (e *Engine) logTail() string {
	b, _ := os.ReadFile(e.logf)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return strings.TrimSpace(string(b))
}

// Podman runs the podman command line against the engine's store.
func (e *Engine) Podman(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, e.podman, append(append([]string{}, e.global...), args...)...)
	cmd.Env = e.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("podman %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// Close removes every container, stops the service and deletes its store.
func (e *Engine) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var errs []error
	if _, err := e.Podman(ctx, "rm", "--all", "--force", "--time", "0"); err != nil {
		errs = append(errs, err)
	}
	if e.svc != nil && e.svc.Process != nil {
		_ = e.svc.Process.Signal(syscall.SIGTERM)
		select {
		case <-e.done:
		case <-time.After(15 * time.Second):
			_ = e.svc.Process.Kill()
			<-e.done
		}
	}
	// Nothing of this engine may outlive it: conmon processes are
	// double-forked away from the service, so find them by the store path
	// on their command line.
	killUnder(e.dir)
	// The store may hold mounts of containers that could not be removed.
	unmountUnder(e.dir)
	if err := os.RemoveAll(e.dir); err != nil {
		errs = append(errs, fmt.Errorf("remove the engine's store: %w", err))
	}
	return errors.Join(errs...)
}

// unmountUnder detaches every mount below dir, deepest first.
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
			points = append(points, f[1])
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		_ = syscall.Unmount(points[i], syscall.MNT_DETACH)
	}
}

// killUnder kills the processes whose command line mentions dir (the
// engine's conmon monitors), so none outlives the engine.
func killUnder(dir string) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(dir+"/")) {
			continue
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
