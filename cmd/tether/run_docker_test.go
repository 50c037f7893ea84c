package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/internal/cmdutil"

	"github.com/tether-ci/tether/client/docker"
	"github.com/tether-ci/tether/internal/dockerengine"
	"github.com/tether-ci/tether/internal/testing/dockertest"
)

// dockerAllBytes is a script printing every byte value once.
func dockerAllBytes() string {
	var b strings.Builder
	b.WriteString("printf '")
	for i := range 256 {
		fmt.Fprintf(&b, `\%03o`, i)
	}
	b.WriteString("'\n")
	return b.String()
}

// dockerEngine starts a private podman service with the busybox and
// tether-shim images, points DOCKER_HOST at it and returns it with a client and the
// two image references.
func dockerEngine(t *testing.T) (e *dockertest.Engine, c *dockerengine.Client, busybox, helper string) {
	t.Helper()
	e = dockertest.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	refs, err := e.LoadImages(ctx, "busybox", "tether-shim")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_HOST", e.Host)
	t.Setenv("TETHER_CACHE", t.TempDir())
	c, err = dockerengine.NewClient(e.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return e, c, refs[0], refs[1]
}

// tetherContainers lists the containers tether created on c.
func tetherContainers(t *testing.T, c *dockerengine.Client) []dockerengine.Summary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := c.ListContainers(ctx, docker.LabelManagedBy+"="+docker.ManagedByValue)
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// TestRunDockerMatchesLocal: `tether run --docker` prints byte-identical
// output and exits with the same code as `tether run --local` for the same
// scripts, and removes its container (unless --keep).
func TestRunDockerMatchesLocal(t *testing.T) {
	_, c, busybox, helper := dockerEngine(t)
	dir := t.TempDir()
	cases := []struct {
		name     string
		scripts  []string // bodies; the last one with --after when after is set
		after    bool
		wantCode int
		want     string
	}{
		{name: "binary-and-partial", scripts: []string{dockerAllBytes() + "printf 'x\\r\\ny'; sleep 0.1; printf 'z'\n"},
			want: func() string {
				var b []byte
				for i := range 256 {
					b = append(b, byte(i))
				}
				return string(b) + "x\r\nyz"
			}()},
		{name: "failing-step", scripts: []string{"echo one; echo err >&2", "echo two; exit 7", "echo never", "echo after"}, after: true,
			wantCode: 7, want: "one\nerr\ntwo\nafter\n"},
		{name: "env", scripts: []string{`printf '%s\n' "$JOB_TEST_VAR"`}, want: "a b=c\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			for i, body := range tc.scripts {
				p := writeScript(t, dir, fmt.Sprintf("%s-%d.sh", tc.name, i), body)
				if tc.after && i == len(tc.scripts)-1 {
					args = append(args, "--after")
				}
				args = append(args, p)
			}
			common := []string{"run", "--env", "JOB_TEST_VAR=a b=c"}
			lout, lerr, lcode := tether(t, dir, append(append(common, "--local"), args...)...)
			dout, derr, dcode := tether(t, dir, append(append(common, "--docker", "--image", busybox, "--helper-image", helper), args...)...)
			if string(lout) != tc.want || lcode != tc.wantCode {
				t.Fatalf("--local: exit %d, stdout %q; want exit %d, %q\nstderr: %s", lcode, lout, tc.wantCode, tc.want, lerr)
			}
			if !bytes.Equal(dout, lout) {
				t.Errorf("--docker stdout is not byte-identical to --local:\n got %q\nwant %q\nstderr: %s", dout, lout, derr)
			}
			if dcode != lcode {
				t.Errorf("--docker exit code %d, --local %d\nstderr: %s", dcode, lcode, derr)
			}
			if left := tetherContainers(t, c); len(left) > 0 {
				t.Errorf("containers left after the job: %+v", left)
			}
		})
	}
	t.Run("keep", func(t *testing.T) { checkKeep(t, c, dir, busybox, helper) })
	// --shim puts that binary into the container instead of the helper's.
	t.Run("shim-flag", func(t *testing.T) {
		p := writeScript(t, dir, "shim.sh", "echo via --shim; exit 4")
		out, errb, code := tether(t, dir, "run", "--docker", "--image", busybox, "--helper-image", "localhost/tether/absent:dev",
			"--shim", filepath.Join(binDir, "tether-shim-static"), p)
		if string(out) != "via --shim\n" || code != 4 {
			t.Errorf("exit %d, stdout %q; want 4, %q\nstderr: %s", code, out, "via --shim\n", errb)
		}
	})
}

// checkKeep: --keep leaves the stopped container for inspection.
func checkKeep(t *testing.T, c *dockerengine.Client, dir, busybox, helper string) {
	p := writeScript(t, dir, "keep.sh", "echo kept")
	out, errb, code := tether(t, dir, "run", "--keep", "--docker", "--image", busybox, "--helper-image", helper, p)
	if string(out) != "kept\n" || code != 0 {
		t.Fatalf("exit %d, stdout %q\nstderr: %s", code, out, errb)
	}
	left := tetherContainers(t, c)
	if len(left) != 1 || !strings.HasPrefix(strings.TrimPrefix(left[0].Names[0], "/"), "tether-job-") || left[0].Labels[docker.LabelJob] == "" {
		t.Fatalf("--keep: containers %+v, want one named tether-job-… with a job label", left)
	}
	if !strings.Contains(string(errb), "kept the job container") {
		t.Errorf("stderr does not say the container was kept: %s", errb)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.RemoveContainer(ctx, left[0].ID, true); err != nil {
		t.Fatal(err)
	}
}

// TestRunDockerNoEngine: without an engine, tether says what to install or
// start and exits 125.
func TestRunDockerNoEngine(t *testing.T) {
	dir := t.TempDir()
	host := "unix://" + filepath.Join(dir, "no-engine.sock")
	t.Setenv("DOCKER_HOST", host)
	p := writeScript(t, dir, "a.sh", "echo a")
	out, errb, code := tether(t, dir, "run", "--docker", "--image", "localhost/tether/busybox:dev", p)
	if code != cmdutil.ExitTether || len(out) != 0 {
		t.Errorf("exit %d, stdout %q; want %d and no output", code, out, cmdutil.ExitTether)
	}
	for _, want := range []string{host, "apt-get install podman", "podman system service", "DOCKER_HOST"} {
		if !strings.Contains(string(errb), want) {
			t.Errorf("stderr does not mention %q:\n%s", want, errb)
		}
	}
}

// TestRunDockerNeedsImage: --docker without --image is a usage error.
func TestRunDockerNeedsImage(t *testing.T) {
	dir := t.TempDir()
	p := writeScript(t, dir, "a.sh", "echo a")
	_, errb, code := tether(t, dir, "run", "--docker", p)
	if code != exitUsage || !strings.Contains(string(errb), "--image") {
		t.Errorf("exit %d, stderr %q; want %d and a word about --image", code, errb, exitUsage)
	}
}
