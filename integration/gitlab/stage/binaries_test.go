package stage_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tether-ci/tether/integration/gitlab/stage"
)

// The stage process's builds run as real processes against a stub agent
// that speaks the wire with this package's own encoders: the Go build
// (cmd/tether-stage, the reference), the C build
// (integration/gitlab/stage/native, what `make build` ships when a C
// compiler is found) and the C build under AddressSanitizer and
// UndefinedBehaviorSanitizer. Every case runs against each.

// testVersion is the version every build of the test reports.
const testVersion = "v0.0.0-stagetest"

// fakeTetherName is the name the test binary runs under as the fake
// `tether` a stage process falls back to.
const fakeTetherName = "tether"

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == fakeTetherName {
		os.Exit(fakeTether())
	}
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// fakeTether records the arguments, environment (exactly as exec passed
// it: os.Environ drops duplicates) and process ID it was started with
// beside itself, and exits 77.
func fakeTether() int {
	dir := filepath.Dir(os.Args[0])
	env, err := os.ReadFile("/proc/self/environ")
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "tether.environ"), env, 0o600)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "tether.argv"), []byte(strings.Join(os.Args, "\x00")+"\x00"), 0o600)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "tether.pid"), []byte(strconv.Itoa(os.Getpid())), 0o600)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake tether:", err)
		return 1
	}
	return 77
}

// record is what the fake tether recorded.
type record struct {
	args, env []string
	pid       int
}

func readRecord(dir string) (*record, error) {
	var files [3][]byte
	for i, name := range []string{"tether.argv", "tether.environ", "tether.pid"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		files[i] = b
	}
	pid, err := strconv.Atoi(string(files[2]))
	if err != nil {
		return nil, err
	}
	split := func(b []byte) []string { return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00") }
	return &record{args: split(files[0]), env: split(files[1]), pid: pid}, nil
}

// build is one build of tether-stage.
type build struct {
	name, bin string
	// env is added to every run's environment (the sanitizers' options).
	env []string
}

var buildDir string

var builds = sync.OnceValues(func() ([]build, error) {
	dir, err := os.MkdirTemp("", "tether-stage-builds-")
	if err != nil {
		return nil, err
	}
	buildDir = dir
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	goBin := filepath.Join(dir, "go", "tether-stage")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-X github.com/tether-ci/tether/internal/version.Version="+testVersion,
		"-o", goBin, "github.com/tether-ci/tether/cmd/tether-stage")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the Go tether-stage: %w\n%s", err, out)
	}
	bs := []build{{name: "go", bin: goBin}}
	if !haveCC() {
		return bs, nil
	}
	for _, b := range []struct{ name, flags string }{
		{"c", ""},
		{"c-sanitized", "-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"},
	} {
		bin := filepath.Join(dir, b.name, "tether-stage")
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, "../../../scripts/build-stage.sh", "build", bin, "linux", runtime.GOARCH, testVersion)
		cmd.Env = append(os.Environ(), "TETHER_STAGE_BUILD=c")
		if b.flags != "" {
			cmd.Env = append(cmd.Env, "STAGE_CFLAGS="+b.flags)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build the %s tether-stage: %w\n%s", b.name, err, out)
		}
		build := build{name: b.name, bin: bin}
		if b.flags != "" {
			build.env = []string{"ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:exitcode=66", "UBSAN_OPTIONS=print_stacktrace=1"}
		}
		bs = append(bs, build)
	}
	return bs, nil
})

func haveCC() bool {
	for _, cc := range []string{"cc", "gcc"} {
		if _, err := exec.LookPath(cc); err == nil {
			return true
		}
	}
	return false
}

// forEachBuild runs f against each build; without a C compiler the C
// builds are skipped, except in CI (CI=true), where that fails.
func forEachBuild(t *testing.T, f func(t *testing.T, b build)) {
	bs, err := builds()
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) == 1 {
		if os.Getenv("CI") == "true" {
			t.Fatal("no C compiler (cc, gcc): the C tether-stage cannot be tested; CI installs gcc (.ci/run)")
		}
		t.Log("no C compiler (cc, gcc): the Go tether-stage alone is tested")
	}
	for _, b := range bs {
		t.Run(b.name, func(t *testing.T) { f(t, b) })
	}
}

// job is one stage process's surroundings: its directories, its
// environment and the agent's directory.
type job struct {
	t                   *testing.T
	b                   build
	dir, bin, work, pwd string
	env                 []string
}

// newJob copies b's binary into a directory of its own (where the fake
// tether may go beside it) and prepares the runner's environment.
func newJob(t *testing.T, b build) *job {
	t.Helper()
	// Short: the agent's socket path must fit a unix socket address.
	dir, err := os.MkdirTemp("", "ts")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	j := &job{t: t, b: b, dir: dir, bin: filepath.Join(dir, "bin", "tether-stage"), work: filepath.Join(dir, "work"), pwd: filepath.Join(dir, "pwd")}
	for _, d := range []string{filepath.Dir(j.bin), j.work, filepath.Join(dir, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// $PWD names the working directory through a symbolic link: the
	// request's directory is $PWD, as os.Getwd finds it.
	if err := os.Symlink(j.work, j.pwd); err != nil {
		t.Fatal(err)
	}
	copyFile(t, b.bin, j.bin)
	j.env = append([]string{
		"TMPDIR=" + filepath.Join(dir, "tmp"), "CUSTOM_ENV_CI_RUNNER_ID=7", "CUSTOM_ENV_CI_JOB_ID=12/x\xffé",
		"SYSTEM_FAILURE_EXIT_CODE=42", "PATH=/nonexistent", "PWD=" + j.pwd,
		"DUP=first", "", "NO_EQUALS_SIGN", "BYTES=\x01\xfe\xff=\n", "DUP=second",
	}, b.env...)
	return j
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// setenv replaces (or adds) key in the job's environment.
func (j *job) setenv(key, value string) {
	for i, kv := range j.env {
		if strings.HasPrefix(kv, key+"=") {
			j.env[i] = key + "=" + value
			return
		}
	}
	j.env = append(j.env, key+"="+value)
}

// goEnviron is env as a Go program's os.Environ returns it: empty entries
// and a key's later duplicates dropped.
func goEnviron(env []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, kv := range env {
		if kv == "" {
			continue
		}
		if k, _, ok := strings.Cut(kv, "="); ok {
			if seen[k] {
				continue
			}
			seen[k] = true
		}
		out = append(out, kv)
	}
	return out
}

// agentDir is the job's agent's directory, made private.
func (j *job) agentDir() string {
	j.t.Helper()
	env := goEnviron(j.env)
	dir, err := stage.Dir(func(k string) string {
		for _, kv := range env {
			if key, v, ok := strings.Cut(kv, "="); ok && key == k {
				return v
			}
		}
		return ""
	})
	if err != nil {
		j.t.Fatal(err)
	}
	if err := stage.MakeDir(dir); err != nil {
		j.t.Fatal(err)
	}
	return dir
}

// agent serves every connection on the job's agent socket with serve and
// returns the requests it received.
func (j *job) agent(serve func(c net.Conn)) <-chan stage.Request {
	j.t.Helper()
	ln, err := net.Listen("unix", filepath.Join(j.agentDir(), stage.SocketName))
	if err != nil {
		j.t.Fatal(err)
	}
	reqs := make(chan stage.Request, 4)
	var wg sync.WaitGroup
	j.t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				typ, p, err := stage.ReadFrame(c)
				var req stage.Request
				if err != nil || typ != stage.FrameRequest || req.UnmarshalBinary(p) != nil {
					j.t.Errorf("the agent's first frame: %q, %v", typ, err)
					return
				}
				reqs <- req
				serve(c)
			}()
		}
	}()
	return reqs
}

// proc is a running stage process.
type proc struct {
	p              *os.Process
	stdout, stderr *watched
	done           chan struct{}
	state          *os.ProcessState
}

// watched collects a pipe's bytes and tells when it holds some.
type watched struct {
	mu   sync.Mutex
	b    bytes.Buffer
	more chan struct{}
}

func (w *watched) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	select {
	case w.more <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (w *watched) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Clone(w.b.Bytes())
}

// waitFor waits until the stream holds want.
func (w *watched) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for !bytes.Contains(w.bytes(), []byte(want)) {
		select {
		case <-w.more:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("no %q in %q", want, w.bytes())
		}
	}
}

// start starts the stage process with args, its environment passed as
// it is (duplicates, empty entries), in the job's working directory.
func (j *job) start(args ...string) *proc {
	j.t.Helper()
	outR, outW, err := os.Pipe()
	if err != nil {
		j.t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		j.t.Fatal(err)
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		j.t.Fatal(err)
	}
	p, err := os.StartProcess(j.bin, append([]string{j.bin}, args...), &os.ProcAttr{Dir: j.work, Env: j.env, Files: []*os.File{null, outW, errW}})
	null.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		j.t.Fatal(err)
	}
	pr := &proc{p: p, stdout: &watched{more: make(chan struct{}, 1)}, stderr: &watched{more: make(chan struct{}, 1)}, done: make(chan struct{})}
	var copies sync.WaitGroup
	copies.Add(2)
	go func() { defer copies.Done(); _, _ = io.Copy(pr.stdout, outR); outR.Close() }()
	go func() { defer copies.Done(); _, _ = io.Copy(pr.stderr, errR); errR.Close() }()
	go func() {
		pr.state, _ = p.Wait()
		copies.Wait()
		close(pr.done)
	}()
	j.t.Cleanup(func() {
		_ = p.Kill()
		<-pr.done
	})
	return pr
}

// wait waits for the process's end.
func (p *proc) wait(t *testing.T) *os.ProcessState {
	t.Helper()
	select {
	case <-p.done:
		return p.state
	case <-time.After(30 * time.Second):
		t.Fatal("the stage process did not end")
		return nil
	}
}

// result is how a stage process ended.
type result struct {
	stdout, stderr string
	code           int
	signal         syscall.Signal
	rec            *record
}

func (j *job) finish(p *proc) result {
	j.t.Helper()
	st := p.wait(j.t)
	ws := st.Sys().(syscall.WaitStatus)
	r := result{stdout: string(p.stdout.bytes()), stderr: string(p.stderr.bytes()), code: ws.ExitStatus()}
	if ws.Signaled() {
		r.signal = ws.Signal()
	}
	for _, dir := range []string{filepath.Dir(j.bin), filepath.Join(j.dir, "path")} {
		if rec, err := readRecord(dir); err == nil {
			r.rec = rec
			if rec.pid != p.p.Pid {
				j.t.Errorf("the fake tether ran as process %d, the stage process was %d: not exec'd in its place", rec.pid, p.p.Pid)
			}
		}
	}
	return r
}
