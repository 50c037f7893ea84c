package stage

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// fakeAgent listens where the job's agent would and answers each
// connection with serve.
func fakeAgent(t *testing.T, env []string, serve func(c net.Conn)) {
	t.Helper()
	p := &Process{Environ: env}
	dir, err := Dir(p.getenv)
	if err != nil {
		t.Fatal(err)
	}
	if err := MakeDir(dir); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, SocketName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
}

func testEnv(t *testing.T) []string {
	return []string{"TMPDIR=" + t.TempDir(), "CUSTOM_ENV_CI_JOB_ID=9", "SYSTEM_FAILURE_EXIT_CODE=42"}
}

// A declined stage, and one whose agent is gone before it began, fall
// back with the process's environment unchanged; one the agent began is
// resumed with its job, offset and the bytes already written; a signal
// received first is passed on.
func TestProcessFallback(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(c net.Conn)
		sig   bool
		want  []string // variables the fallback gets besides the environment
	}{
		{"absent", nil, false, nil},
		{"declined", func(c net.Conn) {
			_, _, _ = ReadFrame(c)
			_ = WriteFrame(c, FrameDecline, []byte("other settings"))
		}, false, nil},
		{"gone before the job", func(c net.Conn) { _, _, _ = ReadFrame(c) }, false, nil},
		{"gone mid-stage", func(c net.Conn) {
			_, _, _ = ReadFrame(c)
			_ = WriteJSON(c, FrameStarted, Started{Job: "step_script-ab", From: 1234})
			_ = WriteFrame(c, FrameStdout, []byte("hello "))
		}, false, []string{ResumeVar + "=step_script-ab 1234 6"}},
		{"cancelled, then gone", func(c net.Conn) {
			_, _, _ = ReadFrame(c)
			_ = WriteFrame(c, FrameStdout, []byte("x"))
			if typ, p, err := ReadFrame(c); err != nil || typ != FrameCancel || string(p) != "SIGTERM" {
				panic("no cancel frame")
			}
		}, true, []string{CancelledVar + "=SIGTERM"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := testEnv(t)
			if tc.serve != nil {
				fakeAgent(t, env, tc.serve)
			}
			var got []string
			sigs := make(chan os.Signal, 1)
			var stderr bytes.Buffer
			stdout := &firstWrite{seen: make(chan struct{})}
			p := &Process{Args: []string{"s", "step_script"}, Environ: env, Stdout: stdout, Stderr: &stderr, Signals: sigs,
				Fallback: func(e []string) error { got = e; return syscall.ENOENT }}
			if tc.sig {
				go func() {
					<-stdout.seen
					sigs <- syscall.SIGTERM
				}()
			}
			code := p.Run()
			if code != 42 || !strings.Contains(stderr.String(), "could not run `tether gitlab run`") {
				t.Fatalf("exit %d, stderr %q; want the system failure", code, stderr.String())
			}
			// Every fallback says it is one: `tether gitlab run` then keeps
			// the job's agent.
			want := append(append(append([]string{}, env...), FallbackVar+"=1"), tc.want...)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("fallback environment %q, want %q", got, want)
			}
		})
	}
}

// firstWrite closes seen at its first write.
type firstWrite struct {
	bytes.Buffer
	seen chan struct{}
}

func (w *firstWrite) Write(p []byte) (int, error) {
	if w.Len() == 0 {
		close(w.seen)
	}
	return w.Buffer.Write(p)
}

// The agent's frames become the process's output and exit code.
func TestProcessRelays(t *testing.T) {
	env := testEnv(t)
	fakeAgent(t, env, func(c net.Conn) {
		_, _, _ = ReadFrame(c)
		_ = WriteFrame(c, FrameStdout, []byte("out\x00"))
		_ = WriteFrame(c, FrameStderr, []byte("err"))
		_ = WriteFrame(c, FrameExit, []byte("3"))
	})
	var stdout, stderr bytes.Buffer
	p := &Process{Environ: env, Stdout: &stdout, Stderr: &stderr, Signals: make(chan os.Signal),
		Fallback: func([]string) error { t.Fatal("fell back"); return nil }}
	if code := p.Run(); code != 3 || stdout.String() != "out\x00" || stderr.String() != "err" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}
