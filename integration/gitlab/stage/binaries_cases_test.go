package stage_test

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-ci/tether/integration/gitlab/stage"
)

// stageArgs are the arguments every case runs the stage process with:
// `tether gitlab run`'s, one of them empty and one not UTF-8.
var stageArgs = []string{"--config", "/etc/tether.yaml", "", "script \xff", "step_script"}

func frame(c net.Conn, typ byte, p string) { _ = stage.WriteFrame(c, typ, []byte(p)) }

func started(c net.Conn, job string, from int64) {
	_ = stage.WriteEncoded(c, stage.FrameStarted, stage.Started{Job: job, From: from})
}

// tetherBeside puts the fake tether beside the stage process's binary.
func (j *job) tetherBeside() {
	j.t.Helper()
	self, err := os.Executable()
	if err != nil {
		j.t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(filepath.Dir(j.bin), "tether")); err != nil {
		j.t.Fatal(err)
	}
}

// tetherOnPath puts the fake tether in a directory of PATH's.
func (j *job) tetherOnPath() {
	j.t.Helper()
	self, err := os.Executable()
	if err != nil {
		j.t.Fatal(err)
	}
	dir := filepath.Join(j.dir, "path")
	if err := os.Mkdir(dir, 0o755); err != nil {
		j.t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(dir, "tether")); err != nil {
		j.t.Fatal(err)
	}
	// An empty element ("." is the working directory, which holds no
	// tether) and a directory that does not exist come first.
	j.setenv("PATH", "/nonexistent::"+dir+"/")
}

// wantFallback checks that the fake tether ran in the stage process's
// place with its arguments and environment, plus extra.
func (j *job) wantFallback(r result, bin string, extra ...string) {
	j.t.Helper()
	if r.rec == nil {
		j.t.Fatalf("no fallback: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	wantArgs := append([]string{bin, "gitlab", "run"}, stageArgs...)
	if strings.Join(r.rec.args, "\x00") != strings.Join(wantArgs, "\x00") {
		j.t.Errorf("tether's arguments %q, want %q", r.rec.args, wantArgs)
	}
	wantEnv := append(append(goEnviron(j.env), stage.FallbackVar+"=1"), extra...)
	if strings.Join(r.rec.env, "\x00") != strings.Join(wantEnv, "\x00") {
		j.t.Errorf("tether's environment\n%q\nwant\n%q", r.rec.env, wantEnv)
	}
	if r.code != 77 {
		j.t.Errorf("exit %d, want the fake tether's 77", r.code)
	}
}

// want checks that the stage ended with code, stdout and stderr.
func (j *job) want(r result, code int, stdout, stderr string) {
	j.t.Helper()
	if r.rec != nil {
		j.t.Errorf("fell back to tether (%q)", r.rec.args)
	}
	if r.code != code || r.stdout != stdout || r.stderr != stderr || r.signal != 0 {
		j.t.Errorf("exit %d (signal %v), stdout %q, stderr %q; want exit %d, stdout %q, stderr %q", r.code, r.signal, tail(r.stdout), r.stderr, code, tail(stdout), stderr)
	}
}

func tail(s string) string {
	if len(s) > 200 {
		return "…" + s[len(s)-200:]
	}
	return s
}

const noTether = "ERROR: tether: the stage could not run `tether gitlab run`: no tether binary beside tether-stage nor on PATH: install both side by side (exec: \"tether\": executable file not found in $PATH)\n"

// --version answers alone: no agent, no tether, no runner environment.
func TestBuildsVersion(t *testing.T) {
	forEachBuild(t, func(t *testing.T, b build) {
		j := newJob(t, b)
		j.env = append([]string{"PATH=/nonexistent"}, b.env...)
		j.want(j.finish(j.start("--version")), 0, "tether-stage "+testVersion+"\n", "")
	})
}

// The agent gets the arguments, the environment as a Go program sees it
// and $PWD; its frames become the process's output, byte for byte (any
// bytes, a frame of MaxFrame, a frame arriving in pieces), and its exit
// frame the exit code.
func TestBuildsRelay(t *testing.T) {
	big := bytes.Repeat([]byte{0, 0xff, '\n', 'a'}, stage.MaxFrame/4)
	var all []byte
	for i := range 256 {
		all = append(all, byte(i))
	}
	forEachBuild(t, func(t *testing.T, b build) {
		j := newJob(t, b)
		reqs := j.agent(func(c net.Conn) {
			started(c, "step_script-1", 7)
			frame(c, stage.FrameStdout, "out\x00\xff")
			frame(c, stage.FrameStderr, "err\n")
			_ = stage.WriteFrame(c, stage.FrameStdout, big)
			_ = stage.WriteFrame(c, stage.FrameStderr, all)
			// A frame in three writes.
			_, _ = c.Write([]byte{stage.FrameStdout, 0, 0, 0, 9})
			time.Sleep(20 * time.Millisecond)
			_, _ = c.Write([]byte("part"))
			time.Sleep(20 * time.Millisecond)
			_, _ = c.Write([]byte("ial \xc3"))
			frame(c, 'z', "a frame type the stage process does not know")
			frame(c, stage.FrameStdout, "\xa9 no newline")
			frame(c, stage.FrameExit, "3")
		})
		r := j.finish(j.start(stageArgs...))
		j.want(r, 3, "out\x00\xff"+string(big)+"partial \xc3\xa9 no newline", "err\n"+string(all))
		req := <-reqs
		if strings.Join(req.Args, "\x00") != strings.Join(stageArgs, "\x00") {
			t.Errorf("the agent got arguments %q, want %q", req.Args, stageArgs)
		}
		if want := goEnviron(j.env); strings.Join(req.Env, "\x00") != strings.Join(want, "\x00") {
			t.Errorf("the agent got environment\n%q\nwant\n%q", req.Env, want)
		}
		if req.Dir != j.pwd {
			t.Errorf("the agent got directory %q, want $PWD %q", req.Dir, j.pwd)
		}
	})
}

// The exit frame's code is parsed as strconv.Atoi does, and the process
// exits with its low eight bits, as os.Exit does.
func TestBuildsExitCodes(t *testing.T) {
	forEachBuild(t, func(t *testing.T, b build) {
		for payload, code := range map[string]int{"0": 0, "1": 1, "+7": 7, "0042": 42, "-1": 255, "256": 0, "9223372036854775807": 255} {
			j := newJob(t, b)
			j.agent(func(c net.Conn) { frame(c, stage.FrameExit, payload) })
			if r := j.finish(j.start(stageArgs...)); r.code != code || r.rec != nil || r.stderr != "" {
				t.Errorf("exit frame %q: exit %d, stderr %q; want %d", payload, r.code, r.stderr, code)
			}
		}
	})
}

// Without an agent the process becomes `tether gitlab run`: the tether
// beside it, else on PATH; without one, or when it cannot run, it says why
// and exits with the runner's system failure code (1 without one).
func TestBuildsFallbackWithoutAgent(t *testing.T) {
	forEachBuild(t, func(t *testing.T, b build) {
		t.Run("beside", func(t *testing.T) {
			j := newJob(t, b)
			j.tetherBeside()
			j.tetherOnPath()
			j.wantFallback(j.finish(j.start(stageArgs...)), filepath.Join(filepath.Dir(j.bin), "tether"))
		})
		t.Run("on PATH", func(t *testing.T) {
			j := newJob(t, b)
			j.tetherOnPath()
			j.wantFallback(j.finish(j.start(stageArgs...)), filepath.Join(j.dir, "path", "tether"))
		})
		t.Run("none", func(t *testing.T) {
			j := newJob(t, b)
			j.want(j.finish(j.start(stageArgs...)), 42, "", noTether)
		})
		t.Run("none, no system failure code", func(t *testing.T) {
			j := newJob(t, b)
			j.setenv("SYSTEM_FAILURE_EXIT_CODE", "forty-two")
			j.want(j.finish(j.start(stageArgs...)), 1, "", noTether)
		})
		t.Run("relative to the working directory", func(t *testing.T) {
			j := newJob(t, b)
			copyFile(t, "/bin/true", filepath.Join(j.work, "tether"))
			j.setenv("PATH", "/nonexistent:.")
			j.want(j.finish(j.start(stageArgs...)), 42, "", "ERROR: tether: the stage could not run `tether gitlab run`: no tether binary beside tether-stage nor on PATH: install both side by side (exec: \"tether\": cannot run executable found relative to current directory)\n")
		})
		t.Run("not a program", func(t *testing.T) {
			j := newJob(t, b)
			if err := os.WriteFile(filepath.Join(filepath.Dir(j.bin), "tether"), []byte("not a program\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			j.want(j.finish(j.start(stageArgs...)), 42, "", "ERROR: tether: the stage could not run `tether gitlab run`: exec format error\n")
		})
		t.Run("agent directory open to others", func(t *testing.T) {
			j := newJob(t, b)
			j.tetherBeside()
			reqs := j.agent(func(c net.Conn) { frame(c, stage.FrameExit, "0") })
			if err := os.Chmod(j.agentDir(), 0o755); err != nil {
				t.Fatal(err)
			}
			j.wantFallback(j.finish(j.start(stageArgs...)), filepath.Join(filepath.Dir(j.bin), "tether"))
			if len(reqs) != 0 {
				t.Error("the stage process reached an agent whose directory others may enter")
			}
		})
	})
}

// An agent that declines the stage, or is gone before it ends, or sends
// what is not the wire, hands the stage to `tether gitlab run`: resuming
// the agent's job after the stdout bytes already written once it began.
func TestBuildsFallbackFromAgent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		serve  func(c net.Conn)
		stdout string
		extra  []string
	}{
		{"declined", func(c net.Conn) { frame(c, stage.FrameDecline, "other settings") }, "", nil},
		{"gone before the job", func(c net.Conn) {}, "", nil},
		{"gone mid-stage", func(c net.Conn) {
			started(c, "step_script-ab", 1234)
			frame(c, stage.FrameStdout, "hello ")
			frame(c, stage.FrameStderr, "not counted")
		}, "hello ", []string{stage.ResumeVar + "=step_script-ab 1234 6"}},
		{"gone inside a frame", func(c net.Conn) {
			started(c, "j 1", 0)
			frame(c, stage.FrameStdout, "abc")
			_, _ = c.Write([]byte{stage.FrameStdout, 0, 0, 0, 10, 'd', 'e'})
		}, "abc", []string{stage.ResumeVar + "=j 1 0 3"}},
		{"frame over the limit", func(c net.Conn) {
			started(c, "j", -5)
			frame(c, stage.FrameStdout, "ab")
			_, _ = c.Write([]byte{stage.FrameStdout, 0xff, 0xff, 0xff, 0xff})
		}, "ab", []string{stage.ResumeVar + "=j -5 2"}},
		{"exit frame not a number", func(c net.Conn) {
			started(c, "j", 1<<40)
			frame(c, stage.FrameExit, " 0")
		}, "", []string{stage.ResumeVar + "=j 1099511627776 0"}},
		{"started frame malformed, then gone", func(c net.Conn) {
			frame(c, stage.FrameStarted, "\xff\xff")
			frame(c, stage.FrameStarted, "\x01j\x02trailing")
			_ = stage.WriteEncoded(c, stage.FrameStarted, stage.Started{Job: "", From: 3})
		}, "", nil},
		{"declined after output: ignored, then gone", func(c net.Conn) {
			started(c, "j", 9)
			frame(c, stage.FrameDecline, "too late")
		}, "", []string{stage.ResumeVar + "=j 9 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachBuild(t, func(t *testing.T, b build) {
				j := newJob(t, b)
				j.tetherBeside()
				reqs := j.agent(tc.serve)
				r := j.finish(j.start(stageArgs...))
				j.wantFallback(r, filepath.Join(filepath.Dir(j.bin), "tether"), tc.extra...)
				if r.stdout != tc.stdout {
					t.Errorf("stdout %q, want %q", r.stdout, tc.stdout)
				}
				if len(reqs) != 1 {
					t.Errorf("the agent got %d requests, want 1", len(reqs))
				}
			})
		})
	}
}

// A declined stage with no tether to fall back to is a system failure
// that says why.
func TestBuildsDeclinedWithoutTether(t *testing.T) {
	forEachBuild(t, func(t *testing.T, b build) {
		j := newJob(t, b)
		j.agent(func(c net.Conn) {
			frame(c, stage.FrameStdout, "x")
			_ = stage.WriteFrame(c, stage.FrameExit, []byte{0xff})
		})
		j.want(j.finish(j.start(stageArgs...)), 42, "x", noTether)
	})
}

// Once the agent has the stage, a first SIGTERM or SIGINT is a cancel
// frame, a second ends the process at once (128+N); an agent gone after
// the cancel hands `tether gitlab run` the signal.
func TestBuildsSignals(t *testing.T) {
	forEachBuild(t, func(t *testing.T, b build) {
		t.Run("cancel", func(t *testing.T) {
			j := newJob(t, b)
			j.agent(func(c net.Conn) {
				frame(c, stage.FrameStdout, "x")
				if typ, p, err := stage.ReadFrame(c); err != nil || typ != stage.FrameCancel || string(p) != "SIGTERM" {
					t.Errorf("cancel frame %q %q %v", typ, p, err)
				}
				frame(c, stage.FrameStdout, "bye")
				frame(c, stage.FrameExit, "143")
			})
			p := j.start(stageArgs...)
			p.stdout.waitFor(t, "x")
			_ = p.p.Signal(syscall.SIGTERM)
			j.want(j.finish(p), 143, "xbye", "tether: SIGTERM: cancelling the job (signal again to exit at once)\n")
		})
		t.Run("again", func(t *testing.T) {
			j := newJob(t, b)
			gone := make(chan error, 1)
			j.agent(func(c net.Conn) {
				frame(c, stage.FrameStdout, "x")
				if typ, p, err := stage.ReadFrame(c); err != nil || typ != stage.FrameCancel || string(p) != "SIGINT" {
					t.Errorf("cancel frame %q %q %v", typ, p, err)
				}
				frame(c, stage.FrameStdout, "y")
				_, _, err := stage.ReadFrame(c) // the stage goes on: no answer
				gone <- err
			})
			p := j.start(stageArgs...)
			p.stdout.waitFor(t, "x")
			_ = p.p.Signal(syscall.SIGINT)
			p.stdout.waitFor(t, "y")
			_ = p.p.Signal(syscall.SIGTERM)
			j.want(j.finish(p), 128+int(syscall.SIGTERM), "xy", "tether: SIGINT: cancelling the job (signal again to exit at once)\ntether: SIGTERM again: exiting now\n")
			select {
			case err := <-gone:
				if err == nil {
					t.Error("the agent read a frame after the second signal")
				}
			case <-time.After(10 * time.Second):
				t.Error("the agent's socket stayed open after the second signal")
			}
		})
		t.Run("cancelled, then gone", func(t *testing.T) {
			j := newJob(t, b)
			j.tetherBeside()
			j.agent(func(c net.Conn) {
				started(c, "step_script-c", 40)
				frame(c, stage.FrameStdout, "xx")
				_, _, _ = stage.ReadFrame(c)
			})
			p := j.start(stageArgs...)
			p.stdout.waitFor(t, "xx")
			_ = p.p.Signal(syscall.SIGTERM)
			r := j.finish(p)
			j.wantFallback(r, filepath.Join(filepath.Dir(j.bin), "tether"), stage.ResumeVar+"=step_script-c 40 2", stage.CancelledVar+"=SIGTERM")
			if r.stderr != "tether: SIGTERM: cancelling the job (signal again to exit at once)\n" {
				t.Errorf("stderr %q", r.stderr)
			}
		})
		t.Run("before the agent has the stage", func(t *testing.T) {
			j := newJob(t, b)
			j.tetherBeside()
			fillQueue(t, filepath.Join(j.agentDir(), stage.SocketName))
			p := j.start(stageArgs...)
			time.Sleep(300 * time.Millisecond)
			_ = p.p.Signal(syscall.SIGTERM)
			if r := j.finish(p); r.signal != syscall.SIGTERM || r.rec != nil || r.stderr != "" {
				t.Errorf("exit %d, signal %v, stderr %q, fell back %v: want the process ended by SIGTERM", r.code, r.signal, r.stderr, r.rec != nil)
			}
		})
	})
}

// An agent whose queue stays full is given up after 2 s: the stage falls
// back.
func TestBuildsAgentQueueFull(t *testing.T) {
	forEachBuild(t, func(t *testing.T, b build) {
		j := newJob(t, b)
		j.tetherBeside()
		fillQueue(t, filepath.Join(j.agentDir(), stage.SocketName))
		start := time.Now()
		j.wantFallback(j.finish(j.start(stageArgs...)), filepath.Join(filepath.Dir(j.bin), "tether"))
		if d := time.Since(start); d < 1500*time.Millisecond {
			t.Errorf("fell back after %v, before the 2 s the connection waits", d)
		}
	})
}

// fillQueue listens at path with a queue of one and fills it: a
// connection to path then waits.
func fillQueue(t *testing.T, path string) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		c, err := net.DialTimeout("unix", path, 100*time.Millisecond)
		if err != nil {
			break
		}
		t.Cleanup(func() { c.Close() })
	}
}
