package docker_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/tether-ci/tether/internal/testing/syncbuf"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/docker"
	"github.com/tether-ci/tether/client/local"
	"github.com/tether-ci/tether/internal/dockerengine"
	"github.com/tether-ci/tether/internal/testing/dockertest"
)

// script is one job script for both backends.
type script struct{ name, body string }

// jobCase is a job run the same way on the local and the docker backend.
type jobCase struct {
	name  string
	main  []script
	after []script
	env   []string
	// want is the exact output, computed independently of both backends.
	want     []byte
	wantExit int
	// wantStatuses are the scripts' exit codes, in order.
	wantStatuses []int
}

// outcome is what a backend produced for a job.
type outcome struct {
	out   []byte
	res   client.Result
	err   error
	diag  string
	ctID  string
	jobID string
}

func randomID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// lines returns "prefix 0\n" … "prefix n-1\n".
func lines(prefix string, n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, "%s %d\n", prefix, i)
	}
	return b.Bytes()
}

func allBytes() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// binaryScript prints every byte value once, 0 to 255, with one printf of
// octal escapes (dash, bash and busybox sh all understand \NNN).
func binaryScript() string {
	var b strings.Builder
	b.WriteString("printf '")
	for i := range 256 {
		fmt.Fprintf(&b, "\\%03o", i)
	}
	b.WriteString("'\n")
	return b.String()
}

func jobCases() []jobCase {
	long := append(append(lines("line", 2000), bytes.Repeat([]byte("x"), 40000)...), '\n')
	return []jobCase{
		{
			name: "text-partial-stderr",
			main: []script{{"text.sh", `echo hello
printf 'no newline'
sleep 0.1
printf ' end\n'
echo to-stderr >&2
printf 'tab\there\r\n'
printf 'unterminated'`}},
			want:         []byte("hello\nno newline end\nto-stderr\ntab\there\r\nunterminated"),
			wantStatuses: []int{0},
		},
		{
			name:         "binary",
			main:         []script{{"binary.sh", binaryScript()}},
			want:         allBytes(),
			wantStatuses: []int{0},
		},
		{
			name:         "long-lines",
			main:         []script{{"long.sh", `i=0; while [ $i -lt 2000 ]; do echo "line $i"; i=$((i+1)); done; head -c 40000 /dev/zero | tr '\0' x; echo`}},
			want:         long,
			wantStatuses: []int{0},
		},
		{
			name: "failing-step",
			main: []script{
				{"one.sh", "echo one"},
				{"fail.sh", "echo two; exit 3"},
				{"never.sh", "echo never"},
			},
			after:        []script{{"after.sh", "echo after"}},
			want:         []byte("one\ntwo\nafter\n"),
			wantExit:     3,
			wantStatuses: []int{0, 3, 0},
		},
		{
			name:         "signal",
			main:         []script{{"signal.sh", "echo before; kill -TERM $$; echo not-reached"}},
			want:         []byte("before\n"),
			wantExit:     143,
			wantStatuses: []int{143},
		},
		{
			name:         "env",
			main:         []script{{"env.sh", `printf '%s|%s\n' "$GREETING" "$EMPTY"`}},
			env:          []string{"GREETING=hi  there", "EMPTY="},
			want:         []byte("hi  there|\n"),
			wantStatuses: []int{0},
		},
	}
}

// runLocal runs jc with the local backend (the shim as a child process).
func runLocal(t *testing.T, jc jobCase) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	write := func(ss []script) []string {
		var paths []string
		for _, s := range ss {
			p := filepath.Join(dir, s.name)
			if err := os.WriteFile(p, []byte(s.body), 0o755); err != nil {
				t.Fatal(err)
			}
			paths = append(paths, p)
		}
		return paths
	}
	job := client.Job{Scripts: write(jc.main), After: write(jc.after)}
	var diag syncbuf.Buffer
	shim, err := local.Start(ctx, local.Config{Shim: env.shim, Env: append(os.Environ(), jc.env...), Stderr: &diag})
	if err != nil {
		t.Fatal(err)
	}
	defer shim.Close()
	var out bytes.Buffer
	res, err := client.Run(ctx, shim, job, client.Options{Output: &out, ExitShim: true})
	return outcome{out: out.Bytes(), res: res, err: err, diag: diag.String()}
}

// startDocker starts jc's container on c (through engine host if it is not
// "") and returns it with the job to send.
func startDocker(t *testing.T, c *docker.Client, jc jobCase, diag *syncbuf.Buffer) (*docker.Container, client.Job) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var files []docker.Script
	place := func(ss []script) []string {
		var paths []string
		for _, s := range ss {
			files = append(files, docker.Script{Name: s.name, Data: []byte(s.body)})
			paths = append(paths, docker.ScriptPath(s.name))
		}
		return paths
	}
	job := client.Job{ID: "test-" + randomID(), Scripts: place(jc.main), After: place(jc.after)}
	ct, err := c.StartJob(ctx, docker.Spec{
		Image:       env.busybox,
		ShimBinary:  env.shim,
		Scripts:     files,
		Env:         jc.env,
		Labels:      map[string]string{docker.LabelJob: job.ID},
		Diagnostics: diag,
		IdleTimeout: 5 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	return ct, job
}

// runDocker runs jc in a container of the suite's engine and removes it.
func runDocker(t *testing.T, c *docker.Client, jc jobCase, opts client.Options) outcome {
	t.Helper()
	var diag syncbuf.Buffer
	ct, job := startDocker(t, c, jc, &diag)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	opts.Output, opts.ExitShim = &out, true
	res, err := client.Run(ctx, ct, job, opts)
	if rerr := ct.Remove(ctx); rerr != nil {
		t.Errorf("remove the job container: %v", rerr)
	}
	return outcome{out: out.Bytes(), res: res, err: err, diag: diag.String(), ctID: ct.ID(), jobID: job.ID}
}

// checkOutcome compares a backend's outcome with the case's expectation.
func checkOutcome(t *testing.T, backend string, jc jobCase, o outcome) {
	t.Helper()
	if o.err != nil {
		t.Fatalf("%s: Run: %v\nshim stderr:\n%s", backend, o.err, o.diag)
	}
	if !bytes.Equal(o.out, jc.want) {
		t.Errorf("%s: output differs from the expected %d bytes (got %d bytes)\n got: %q\nwant: %q", backend, len(jc.want), len(o.out), clip(o.out), clip(jc.want))
	}
	if o.res.ExitCode != jc.wantExit {
		t.Errorf("%s: exit code %d, want %d", backend, o.res.ExitCode, jc.wantExit)
	}
	var codes []int
	for _, s := range o.res.Statuses {
		codes = append(codes, s.CommandExitCode)
	}
	if fmt.Sprint(codes) != fmt.Sprint(jc.wantStatuses) {
		t.Errorf("%s: script exit codes %v, want %v", backend, codes, jc.wantStatuses)
	}
}

func clip(b []byte) []byte {
	if len(b) > 300 {
		return append(append([]byte{}, b[:150]...), append([]byte(" … "), b[len(b)-150:]...)...)
	}
	return b
}

// checkGone asserts that the container no longer exists.
func checkGone(t *testing.T, c *docker.Client, id string, labels ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := engineOf(t, c)
	if _, err := e.InspectContainer(ctx, id); !dockerengine.IsNotFound(err) {
		t.Errorf("container %s still exists after Remove (inspect: %v)", id, err)
	}
	if len(labels) > 0 {
		left, err := e.ListContainers(ctx, labels...)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) > 0 {
			t.Errorf("containers left behind with labels %v: %+v", labels, left)
		}
	}
}

// TestJobMatchesLocal runs each job on the local backend and in a podman
// container: both must produce the exact expected bytes and exit codes, and
// the container must be gone afterwards.
func TestJobMatchesLocal(t *testing.T) {
	c := needEngine(t)
	for _, jc := range jobCases() {
		t.Run(jc.name, func(t *testing.T) {
			t.Parallel()
			lo := runLocal(t, jc)
			checkOutcome(t, "local", jc, lo)
			do := runDocker(t, c, jc, client.Options{})
			checkOutcome(t, "docker", jc, do)
			if !bytes.Equal(lo.out, do.out) {
				t.Errorf("docker output (%d bytes) is not byte-identical to local output (%d bytes)", len(do.out), len(lo.out))
			}
			for i := range min(len(lo.res.Statuses), len(do.res.Statuses)) {
				l, d := lo.res.Statuses[i], do.res.Statuses[i]
				if path.Base(l.Script) != path.Base(d.Script) || l.Phase != d.Phase || l.Signal != d.Signal {
					t.Errorf("status %d: local %+v, docker %+v", i, l, d)
				}
			}
			if do.res.Exit == nil || do.res.Exit.ExitCode != jc.wantExit {
				t.Errorf("docker: shim's final record %+v, want exit code %d", do.res.Exit, jc.wantExit)
			}
			checkGone(t, c, do.ctID, docker.LabelJob+"="+do.jobID)
		})
	}
}

// TestScriptsLandInContainer checks the container layout StartJob uploads:
// scripts under ScriptDir, the shim as PID 1 reading the command FIFO.
func TestScriptsLandInContainer(t *testing.T) {
	c := needEngine(t)
	jc := jobCase{
		main: []script{{"layout.sh", `ls /tether/scripts; cat /proc/1/cmdline | tr '\0' ' '; echo; [ -p /tether/commands ] && echo fifo`}, {"b.sh", "true"}},
	}
	o := runDocker(t, c, jc, client.Options{})
	if o.err != nil {
		t.Fatalf("Run: %v\n%s", o.err, o.diag)
	}
	want := "b.sh\nlayout.sh\n" + docker.ShimPath + " --commands=" + docker.CommandsPath + " --spool-dir=" + docker.SpoolDir + " --idle-timeout=5m0s \nfifo\n"
	if string(o.out) != want {
		t.Errorf("container layout:\n got %q\nwant %q", o.out, want)
	}
}

// TestConnectAfterExit: once the shim exited, Connect reports
// client.ErrShimGone (container stopped), and again once it was removed.
func TestConnectAfterExit(t *testing.T) {
	c := needEngine(t)
	var diag syncbuf.Buffer
	ct, job := startDocker(t, c, jobCase{main: []script{{"a.sh", "echo a"}}}, &diag)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	defer ct.Remove(ctx)
	var out bytes.Buffer
	if _, err := client.Run(ctx, ct, job, client.Options{Output: &out, ExitShim: true}); err != nil {
		t.Fatalf("Run: %v\n%s", err, diag.String())
	}
	code, err := ct.Wait(ctx)
	if err != nil || code != 0 {
		t.Fatalf("Wait: exit code %d, %v", code, err)
	}
	if _, err := ct.Connect(ctx); !isShimGone(err) {
		t.Errorf("Connect to an exited container: %v, want ErrShimGone", err)
	}
	if err := ct.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ct.Connect(ctx); !isShimGone(err) || !strings.Contains(err.Error(), "no longer exists") {
		t.Errorf("Connect to a removed container: %v, want ErrShimGone (no longer exists)", err)
	}
	checkGone(t, c, ct.ID())
}

func isShimGone(err error) bool { return errors.Is(err, client.ErrShimGone) }

// TestMissingImage: bad input (a missing image or helper image, a variable
// reserved for the shim) fails with a clear error and leaves nothing behind.
func TestMissingImage(t *testing.T) {
	c := needEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := randomID()
	_, err := c.StartJob(ctx, docker.Spec{Image: "localhost/tether/does-not-exist:dev", ShimBinary: env.shim, Labels: map[string]string{docker.LabelJob: id}})
	if err == nil || !strings.Contains(err.Error(), "not in the engine's image store") || !strings.Contains(err.Error(), "load") {
		t.Fatalf("StartJob with a missing image: %v", err)
	}
	_, err = c.StartJob(ctx, docker.Spec{Image: env.busybox, HelperImage: "localhost/tether/no-helper:dev"})
	if err == nil || !strings.Contains(err.Error(), "no-helper") || !strings.Contains(err.Error(), "not in the engine's image store") {
		t.Fatalf("StartJob with a missing helper image: %v", err)
	}
	_, err = c.StartJob(ctx, docker.Spec{Image: env.busybox, ShimBinary: env.shim, Env: []string{"CI=true", "TETHER_COMMANDS=/tmp/fifo"}})
	if err == nil || !strings.Contains(err.Error(), "TETHER_COMMANDS") || !strings.Contains(err.Error(), "reserved") {
		t.Fatalf("StartJob with a variable of the shim's: %v", err)
	}
	left, err := engineOf(t, c).ListContainers(ctx, docker.LabelManagedBy+"="+docker.ManagedByValue)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("containers left behind: %+v", left)
	}
}

// TestHelperImage takes the shim from the project's tether-shim image (the
// multi-platform OCI archive `make images` and `make release` write; podman
// picks this machine's platform), copied out through the archive API and
// cached per image ID, runs a job with it, and leaves no container behind
// (not even the helper's).
func TestHelperImage(t *testing.T) {
	c := needEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	refs, err := env.engine.LoadImages(ctx, "tether-shim")
	if err != nil {
		t.Fatal(err)
	}
	// The shim image has no shell: the shim still starts (it needs none),
	// and each script fails clearly with 127.
	noShell, err := c.StartJob(ctx, docker.Spec{Image: refs[0], ShimBinary: env.shim, Scripts: []docker.Script{{Name: "hi.sh", Data: []byte("echo hi")}}})
	if err != nil {
		t.Fatalf("StartJob with an image without a shell: %v", err)
	}
	var noShellOut bytes.Buffer
	res, err := client.Run(ctx, noShell, client.Job{Scripts: []string{docker.ScriptPath("hi.sh")}}, client.Options{Output: &noShellOut, ExitShim: true})
	if rerr := noShell.Remove(ctx); rerr != nil {
		t.Error(rerr)
	}
	if err != nil || res.ExitCode != 127 || len(res.Statuses) != 1 || !strings.Contains(res.Statuses[0].Error, "shell") {
		t.Errorf("job in an image without a shell: %+v, %v; want exit 127 saying there is no shell", res, err)
	}
	cache := t.TempDir()
	for run := range 2 {
		ct, err := c.StartJob(ctx, docker.Spec{
			Image:       env.busybox,
			HelperImage: refs[0],
			ShimCache:   cache,
			Scripts:     []docker.Script{{Name: "hi.sh", Data: []byte("echo hi from the helper shim")}},
		})
		if err != nil {
			t.Fatalf("run %d: StartJob: %v", run, err)
		}
		var out bytes.Buffer
		res, err := client.Run(ctx, ct, client.Job{Scripts: []string{docker.ScriptPath("hi.sh")}}, client.Options{Output: &out, ExitShim: true})
		if rerr := ct.Remove(ctx); rerr != nil {
			t.Error(rerr)
		}
		if err != nil || res.ExitCode != 0 || out.String() != "hi from the helper shim\n" {
			t.Fatalf("run %d: %q, %+v, %v", run, out.String(), res, err)
		}
		checkGone(t, c, ct.ID(), docker.LabelManagedBy+"="+docker.ManagedByValue)
	}
	entries, err := filepath.Glob(filepath.Join(cache, "*", "tether-shim"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("shim cache holds %v (%v), want one shim", entries, err)
	}
	cached, err := os.ReadFile(entries[0])
	if err != nil {
		t.Fatal(err)
	}
	root, err := dockertest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// build-images.sh wrote the image from its per-platform build.
	inImage, err := os.ReadFile(filepath.Join(dockertest.ImageDir(root), "linux-"+runtime.GOARCH, "tether-shim"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cached, inImage) {
		t.Errorf("the cached shim (%d bytes) is not the helper image's (%d bytes)", len(cached), len(inImage))
	}
}
