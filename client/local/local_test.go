package local_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/local"
	"github.com/tether-ci/tether/protocol"
)

func TestConnectReadsRecordsAndCutBreaksOnlyTheConnection(t *testing.T) {
	s := startShim(t)
	c, err := s.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	line, _ := protocol.AppendCommand(nil, protocol.Command{Cmd: protocol.CmdResume, From: 0, Nonce: "n1"})
	if _, err := c.Write(line); err != nil {
		t.Fatal(err)
	}
	// The hello may arrive live before the resume answer; after the answer
	// the replay starts with it again.
	dec := protocol.NewDecoder(c)
	for {
		rec, err := dec.Next()
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if rec.Type == protocol.TypeResumed {
			break
		}
	}
	if rec, err := dec.Next(); err != nil || rec.Type != protocol.TypeHello || rec.Seq != 0 {
		t.Fatalf("after the resume answer: %v %d %v, want the hello at offset 0", rec.Type, rec.Seq, err)
	}
	s.Cut()
	if _, err := dec.Next(); err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("read after Cut: %v, want a connection error", err)
	}
	if _, err := c.Write(line); err == nil {
		t.Fatal("write after Cut succeeded")
	}
	// The shim still runs: a new connection gets answers.
	c2, err := s.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	line, _ = protocol.AppendCommand(nil, protocol.Command{Cmd: protocol.CmdPing, Nonce: "p1"})
	if _, err := c2.Write(line); err != nil {
		t.Fatal(err)
	}
	rec, err := protocol.NewDecoder(c2).Next()
	if err != nil || rec.Type != protocol.TypeAlive {
		t.Fatalf("after reconnect: %v %v, want an alive record", rec.Type, err)
	}
	c2.Close()
	select {
	case <-s.Exited():
		t.Fatal("the shim exited after its connections closed")
	case <-time.After(50 * time.Millisecond):
	}
}

func TestConnectAfterExitIsShimGone(t *testing.T) {
	s := startShim(t)
	c, err := s.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	line, _ := protocol.AppendCommand(nil, protocol.Command{Cmd: protocol.CmdExit})
	if _, err := c.Write(line); err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read until the shim exits: %v", err)
	}
	if !strings.Contains(string(data), "\nx ") {
		t.Fatalf("no final record in %q", data)
	}
	if err := s.Wait(); err != nil {
		t.Fatalf("shim exit: %v", err)
	}
	if _, err := s.Connect(context.Background()); !errors.Is(err, client.ErrShimGone) {
		t.Fatalf("Connect after exit: %v, want ErrShimGone", err)
	}
}

func TestCloseStopsARunningJobAndRemovesTheSpool(t *testing.T) {
	s, err := local.Start(context.Background(), local.Config{Shim: shimBin, StopTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	spool := spoolDir(t, s.Pid())
	c, err := s.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	line, _ := protocol.AppendCommand(nil, protocol.Command{Cmd: protocol.CmdRun, Script: script(t, "sleep.sh", "sleep 60\n")})
	if _, err := c.Write(line); err != nil {
		t.Fatal(err)
	}
	// Close once the script runs (its begin record arrived).
	stop := time.AfterFunc(30*time.Second, func() { c.Close() })
	var seen []byte
	buf := make([]byte, 4096)
	for !bytes.HasPrefix(seen, []byte("b ")) && !bytes.Contains(seen, []byte("\nb ")) {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("waiting for the script's begin record: %v (read %q)", err, seen)
		}
		seen = append(seen, buf[:n]...)
	}
	stop.Stop()
	// Close returns an error if it had to kill the shim; 143 is the shim's
	// own exit on SIGTERM, once it stopped the script.
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if code := s.ExitCode(); code != 143 {
		t.Fatalf("shim exit code %d, want 143 (SIGTERM handled)", code)
	}
	if _, err := os.Stat(spool); !os.IsNotExist(err) {
		t.Fatalf("spool dir %s still exists (%v)", spool, err)
	}
}

// spoolDir returns the --spool-dir argument of process pid.
// Right after Start the process may not have executed the shim yet (its
// command line is still the parent's, or empty): it is read until it is.
func spoolDir(t *testing.T, pid int) string {
	t.Helper()
	var b []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var err error
		if b, err = os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline")); err != nil {
			t.Fatal(err)
		}
		for _, a := range strings.Split(string(b), "\x00") {
			if v, ok := strings.CutPrefix(a, "--spool-dir="); ok {
				return v
			}
		}
	}
	t.Fatalf("no --spool-dir in %q", b)
	return ""
}

func TestFindShim(t *testing.T) {
	if p, err := local.FindShim(shimBin); err != nil || p != shimBin {
		t.Fatalf("FindShim(explicit) = %q, %v", p, err)
	}
	_, err := local.FindShim(filepath.Join(t.TempDir(), "missing"))
	if err == nil || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("FindShim(missing) error %v should name make build", err)
	}
	t.Setenv("PATH", filepath.Dir(shimBin))
	if p, err := local.FindShim(""); err != nil || p != shimBin {
		t.Fatalf("FindShim from PATH = %q, %v", p, err)
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := local.FindShim(""); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("FindShim with nothing on PATH: %v", err)
	}
}
