package stage

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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
			_ = WriteEncoded(c, FrameStarted, Started{Job: "step_script-ab", From: 1234})
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

// The agent gets the process's arguments, environment and directory;
// its frames become the process's output and exit code.
func TestProcessRelays(t *testing.T) {
	env := testEnv(t)
	got := make(chan Request, 1)
	fakeAgent(t, env, func(c net.Conn) {
		typ, b, err := ReadFrame(c)
		var req Request
		if err != nil || typ != FrameRequest || req.UnmarshalBinary(b) != nil {
			panic("no request frame")
		}
		got <- req
		_ = WriteFrame(c, FrameStdout, []byte("out\x00"))
		_ = WriteFrame(c, FrameStderr, []byte("err"))
		_ = WriteFrame(c, FrameExit, []byte("3"))
	})
	var stdout, stderr bytes.Buffer
	p := &Process{Args: []string{"--config", "c.yaml", "s", "step_script"}, Environ: env, Dir: "/builds/x", Stdout: &stdout, Stderr: &stderr, Signals: make(chan os.Signal),
		Fallback: func([]string) error { t.Fatal("fell back"); return nil }}
	if code := p.Run(); code != 3 || stdout.String() != "out\x00" || stderr.String() != "err" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	req := <-got
	if strings.Join(req.Args, " ") != "--config c.yaml s step_script" || strings.Join(req.Env, "\n") != strings.Join(env, "\n") || req.Dir != "/builds/x" {
		t.Fatalf("the agent got %+v", req)
	}
}

// A first signal cancels the stage in band; a second ends the process at
// once (128+N), while the agent still holds the stage.
func TestProcessSecondSignal(t *testing.T) {
	env := testEnv(t)
	cancelled := make(chan string, 1)
	fakeAgent(t, env, func(c net.Conn) {
		_, _, _ = ReadFrame(c)
		_ = WriteFrame(c, FrameStdout, []byte("x"))
		typ, p, err := ReadFrame(c)
		if err == nil && typ == FrameCancel {
			cancelled <- string(p)
		}
		// The stage goes on: the agent never answers.
		_, _, _ = ReadFrame(c)
	})
	sigs := make(chan os.Signal, 2)
	var stderr syncBuffer
	stdout := &firstWrite{seen: make(chan struct{})}
	p := &Process{Environ: env, Stdout: stdout, Stderr: &stderr, Signals: sigs,
		Fallback: func([]string) error { t.Error("fell back"); return syscall.ENOENT }}
	go func() {
		<-stdout.seen
		sigs <- syscall.SIGTERM
		if name := <-cancelled; name != "SIGTERM" {
			t.Errorf("cancel frame %q", name)
		}
		sigs <- syscall.SIGINT
	}()
	done := make(chan int, 1)
	go func() { done <- p.Run() }()
	select {
	case code := <-done:
		if code != 128+int(syscall.SIGINT) {
			t.Fatalf("exit %d, want %d", code, 128+int(syscall.SIGINT))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second signal did not end the process")
	}
	if s := stderr.String(); !strings.Contains(s, "SIGTERM: cancelling the job") || !strings.Contains(s, "SIGINT again: exiting now") {
		t.Fatalf("stderr %q", s)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The process listens for signals once the agent has the stage, never
// before it falls back without one (`tether gitlab run`, which it
// becomes, handles them itself).
func TestProcessListensOnceTheAgentHasTheStage(t *testing.T) {
	for _, agent := range []bool{false, true} {
		env := testEnv(t)
		if agent {
			fakeAgent(t, env, func(c net.Conn) {
				_, _, _ = ReadFrame(c)
				_ = WriteFrame(c, FrameExit, []byte("0"))
			})
		}
		listened := 0
		p := &Process{Environ: env, Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, Signals: make(chan os.Signal),
			Listen:   func() { listened++ },
			Fallback: func([]string) error { return syscall.ENOENT }}
		p.Run()
		if want := map[bool]int{false: 0, true: 1}[agent]; listened != want {
			t.Fatalf("with an agent %v: listened %d times, want %d", agent, listened, want)
		}
	}
}
