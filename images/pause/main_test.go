package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary act as the pause program when asked, so the
// tests run the real main() in a real child process.
func TestMain(m *testing.M) {
	if os.Getenv("TETHER_PAUSE_TEST_MAIN") == "1" {
		sigs := subscribe()
		os.Stdout.WriteString("ready\n") // the handlers are installed
		serve(sigs)
		os.Exit(3) // serve returned without a signal: wrong
	}
	os.Exit(m.Run())
}

func startPause(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "TETHER_PAUSE_TEST_MAIN=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start pause: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	waitReady(t, out)
	return cmd
}

// waitReady waits for the helper's "ready" line: its handlers are
// installed (a fixed sleep is not enough on a loaded machine).
func waitReady(t *testing.T, out io.Reader) {
	t.Helper()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("pause helper did not report ready: %q %v", line, err)
	}
}

func waitExit(t *testing.T, cmd *exec.Cmd, within time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(within):
		t.Fatalf("pause did not exit within %v", within)
		return nil
	}
}

func TestExitsZeroOnTermAndInt(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := startPause(t)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatalf("signal: %v", err)
			}
			if err := waitExit(t, cmd, 5*time.Second); err != nil {
				t.Fatalf("pause exited with %v after %v, want exit status 0", err, sig)
			}
		})
	}
}

func TestKeepsRunningOnSIGCHLD(t *testing.T) {
	cmd := startPause(t)
	if err := cmd.Process.Signal(syscall.SIGCHLD); err != nil {
		t.Fatalf("signal: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	// Signal 0 only checks that the process is still there.
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("pause is gone after SIGCHLD: %v", err)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := waitExit(t, cmd, 5*time.Second); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("pause exited with %v after SIGTERM, want 0", ee)
		}
		t.Fatal(err)
	}
}

// TestReapCollectsExitedChildren runs reap in this process: a child that
// exited stays a zombie until reap collects it.
func TestReapCollectsExitedChildren(t *testing.T) {
	pid, err := syscall.ForkExec(os.Args[0], []string{os.Args[0], "-test.run=^$"}, &syscall.ProcAttr{Env: os.Environ()})
	if err != nil {
		t.Fatalf("fork child: %v", err)
	}
	// Wait until the child is a zombie (state Z) without reaping it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatalf("read child state: %v", err)
		}
		if zombie(b) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %d did not exit", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A multi-threaded child shows Z as soon as its main thread exited, but
	// the kernel lets it be reaped only once its other threads are gone
	// too: reap again until then.
	for {
		reap()
		_, err := os.Stat("/proc/" + strconv.Itoa(pid))
		if errors.Is(err, os.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %d still exists after reap (stat: %v)", pid, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// zombie reports whether a /proc/PID/stat line says state Z.
func zombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}
