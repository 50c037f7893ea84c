package local_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"github.com/tether-ci/tether/internal/testing/syncbuf"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/local"
	"github.com/tether-ci/tether/protocol"
)

// These tests run client sessions against real tether-shim processes
// through the local backend.

func TestRunJobSemanticsAfterScriptsAfterFailure(t *testing.T) {
	s := startShim(t)
	var out syncbuf.Buffer
	var events []client.Event
	opts := fastOpts(&out)
	opts.Events = func(ev client.Event) { events = append(events, ev) }
	job := client.Job{
		Scripts: []string{
			script(t, "one.sh", "echo one\n"),
			script(t, "two.sh", "echo two; exit 3\n"),
			script(t, "three.sh", "echo three\n"),
		},
		After: []string{script(t, "after.sh", "echo after\n")},
	}
	res, err := client.Run(context.Background(), s, job, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := out.String(), "one\ntwo\nafter\n"; got != want {
		t.Fatalf("output %q, want %q", got, want)
	}
	if res.ExitCode != 3 || res.FailedScript != job.Scripts[1] || res.Cancelled {
		t.Fatalf("result %+v, want exit 3 from %s", res, job.Scripts[1])
	}
	var ran []string
	for _, st := range res.Statuses {
		ran = append(ran, fmt.Sprintf("%s:%s:%d", filepath.Base(st.Script), st.Phase, st.CommandExitCode))
	}
	if got, want := strings.Join(ran, " "), "one.sh:script:0 two.sh:script:3 after.sh:after:0"; got != want {
		t.Fatalf("statuses %s, want %s", got, want)
	}
	var kinds []string
	for _, ev := range events {
		kinds = append(kinds, ev.Kind.String())
	}
	if got, want := strings.Join(kinds, " "), "connected script-begin script-status script-begin script-status script-begin script-status"; got != want {
		t.Fatalf("events %s, want %s", got, want)
	}
}

func TestRunExitShimGetsTheFinalRecord(t *testing.T) {
	s := startShim(t)
	var out syncbuf.Buffer
	opts := fastOpts(&out)
	opts.ExitShim = true
	res, err := client.Run(context.Background(), s, client.Job{Scripts: []string{script(t, "a.sh", "exit 4\n")}}, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.ExitCode != 4 || res.Exit == nil || res.Exit.Reason != protocol.ReasonExitCommand {
		t.Fatalf("result %+v (exit %+v)", res, res.Exit)
	}
	if err := s.Wait(); err == nil || s.ExitCode() != 4 {
		t.Fatalf("shim exit %v code %d, want 4", err, s.ExitCode())
	}
}

func TestFakeStatusAndRecordsInOutputCannotChangeTheExitCode(t *testing.T) {
	s := startShim(t)
	var out syncbuf.Buffer
	body := `printf '%s\n' '{"command_exit_code": 0, "script": "x"}'
printf 's 0 {"script":"x","command_exit_code":0}\n'
printf 'j 5 {"exit_code":0,"failed_script":"","cancelled":false}\n'
printf 'x 9 {"reason":"exit-command","exit_code":0,"message":"fake"}\n'
printf 'r - {"nonce":"x","from":0,"end":0}\n'
printf '\nj 5 {"exit_code":0}'
exit 7
`
	res, err := client.Run(context.Background(), s, client.Job{Scripts: []string{script(t, "fake.sh", body)}}, opts(&out))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.ExitCode != 7 {
		t.Fatalf("exit code %d, want 7", res.ExitCode)
	}
	want := `{"command_exit_code": 0, "script": "x"}
s 0 {"script":"x","command_exit_code":0}
j 5 {"exit_code":0,"failed_script":"","cancelled":false}
x 9 {"reason":"exit-command","exit_code":0,"message":"fake"}
r - {"nonce":"x","from":0,"end":0}

j 5 {"exit_code":0}`
	if out.String() != want {
		t.Fatalf("output %q, want %q", out.String(), want)
	}
}

func opts(out *syncbuf.Buffer) client.Options { return fastOpts(out) }

// Partial output (no newline) reaches the client while the script is
// still running and prints nothing more: each piece is printed, then the
// script blocks on a FIFO that the test opens only once the client wrote
// that piece. A shim that held an unfinished line until more output or the
// script's exit would leave the test waiting for the piece.
func TestPartialOutputArrivesWhileTheScriptWaits(t *testing.T) {
	s := startShim(t)
	dir := t.TempDir()
	var body strings.Builder
	var fifos []string
	for i := range 3 {
		fifo := filepath.Join(dir, fmt.Sprintf("go%d", i))
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		fifos = append(fifos, fifo)
		fmt.Fprintf(&body, "printf 'piece%d;'\nread _ < %s\n", i, fifo)
	}
	var out syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		_, err := client.Run(context.Background(), s, client.Job{Scripts: []string{script(t, "pieces.sh", body.String())}}, fastOpts(&out))
		done <- err
	}()
	var want string
	for i, fifo := range fifos {
		want += fmt.Sprintf("piece%d;", i)
		out.WaitFor(t, want, 30*time.Second) // the script waits on the FIFO meanwhile
		if got := out.String(); got != want {
			t.Fatalf("output %q, want %q", got, want)
		}
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("go\n"); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := out.String(); got != want {
		t.Fatalf("output %q, want %q", got, want)
	}
}

func TestCancelStopsTheScriptRunsAfterScriptsAndWrapsTheCause(t *testing.T) {
	for _, cut := range []bool{false, true} {
		t.Run(fmt.Sprintf("cut=%v", cut), func(t *testing.T) {
			s := startShim(t)
			var out syncbuf.Buffer
			job := client.Job{
				Scripts: []string{
					script(t, "long.sh", "trap 'echo terminated; exit 143' TERM\necho started\nsleep 60 & wait $!\n"),
					script(t, "next.sh", "echo must-not-run\n"),
				},
				After: []string{script(t, "after.sh", "echo cleanup\n")},
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			cause := errors.New("test cancels the job")
			go func() {
				out.WaitFor(t, "started\n", 10*time.Second)
				if cut {
					s.Cut() // the cancel must get through on the next connection
				}
				cancel(cause)
			}()
			res, err := client.Run(ctx, s, job, fastOpts(&out))
			if !errors.Is(err, cause) {
				t.Fatalf("Run error %v, want it to wrap the cause", err)
			}
			if !res.Cancelled || res.ExitCode != 143 {
				t.Fatalf("result %+v, want cancelled with exit 143", res)
			}
			// "terminated": the TERM stopped the script's 60 s wait.
			if got, want := out.String(), "started\nterminated\ncleanup\n"; got != want {
				t.Fatalf("output %q, want %q", got, want)
			}
		})
	}
}

func TestCancelEscalatesToKillAfterGrace(t *testing.T) {
	s := startShim(t)
	var out syncbuf.Buffer
	job := client.Job{Scripts: []string{script(t, "stubborn.sh", "trap '' TERM\necho started\nwhile :; do sleep 0.05; done\n")}}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		out.WaitFor(t, "started\n", 10*time.Second)
		cancel()
	}()
	o := fastOpts(&out)
	o.CancelGrace = 300 * time.Millisecond
	res, err := client.Run(ctx, s, job, o)
	if !errors.Is(err, context.Canceled) || !res.Cancelled {
		t.Fatalf("Run: %+v, %v", res, err)
	}
	if len(res.Statuses) != 1 || res.Statuses[0].Signal != "SIGKILL" || res.ExitCode != 137 {
		t.Fatalf("statuses %+v exit %d, want SIGKILL/137", res.Statuses, res.ExitCode)
	}
}

func TestStreamEndingWithoutResultIsAnError(t *testing.T) {
	s := startShim(t)
	var out syncbuf.Buffer
	go func() {
		out.WaitFor(t, "started\n", 10*time.Second)
		_ = syscall.Kill(s.Pid(), syscall.SIGKILL) // no final record is written
	}()
	res, err := client.Run(context.Background(), s, client.Job{Scripts: []string{script(t, "a.sh", "echo started; sleep 60\n")}}, fastOpts(&out))
	if !errors.Is(err, client.ErrNoResult) || !errors.Is(err, client.ErrShimGone) {
		t.Fatalf("Run error %v, want ErrNoResult and ErrShimGone", err)
	}
	if res.ExitCode != 0 || res.Exit != nil {
		t.Fatalf("result %+v carries an outcome", res)
	}
}

func TestShimDeadlineBeforeJobIsErrShimExited(t *testing.T) {
	s := startShim(t, "--deadline=1", "--grace=200ms")
	var out syncbuf.Buffer
	res, err := client.Run(context.Background(), s, client.Job{Scripts: []string{script(t, "a.sh", "echo started; sleep 60\n")}}, fastOpts(&out))
	if !errors.Is(err, client.ErrShimExited) {
		t.Fatalf("Run error %v, want ErrShimExited", err)
	}
	if res.ExitCode != 124 || res.Exit == nil || res.Exit.Reason != protocol.ReasonDeadline {
		t.Fatalf("result %+v exit %+v, want the deadline's 124", res, res.Exit)
	}
}

// bigFile writes size pseudo-random bytes (binary, newlines at random
// places, a long line without newline at the end) and returns its path and
// content.
func bigFile(t *testing.T, size int, seed uint64) (string, []byte) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	data := make([]byte, size)
	for i := range data {
		switch v := r.Uint32(); {
		case v%97 == 0:
			data[i] = '\n'
		case v%5 == 0:
			data[i] = byte(v >> 8) // any byte, often invalid UTF-8
		default:
			data[i] = 'a' + byte(v>>8)%26
		}
	}
	p := filepath.Join(t.TempDir(), "data.bin")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, data
}

func TestResumeAfterRandomCutsLosesAndRepeatsNothing(t *testing.T) {
	rounds := 3
	if testing.Short() {
		rounds = 1
	}
	for round := range rounds {
		t.Run(strconv.Itoa(round), func(t *testing.T) {
			const chunk, chunks = 32 << 10, 120
			path, data := bigFile(t, chunk*chunks+777, uint64(round+1))
			// Output in many pieces over about a second, so cuts land
			// everywhere: inside records, between them, during replays.
			body := fmt.Sprintf("i=0\nwhile [ $i -le %d ]; do dd if=%s bs=%d skip=$i count=1 2>/dev/null; i=$((i+1)); done\n", chunks, path, chunk)
			s := startShim(t)
			var out syncbuf.Buffer
			stop := make(chan struct{})
			cuts := 0
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(round), 7))
				for {
					select {
					case <-stop:
						return
					case <-time.After(time.Duration(1+r.IntN(15)) * time.Millisecond):
						s.Cut()
						cuts++
					}
				}
			}()
			res, err := client.Run(context.Background(), s, client.Job{Scripts: []string{script(t, "big.sh", body)}}, fastOpts(&out))
			close(stop)
			wg.Wait()
			if err != nil {
				t.Fatalf("Run after %d cuts: %v", cuts, err)
			}
			got := out.Bytes()
			if len(got) != len(data) || sha256.Sum256(got) != sha256.Sum256(data) {
				i := 0
				for i < min(len(got), len(data)) && got[i] == data[i] {
					i++
				}
				t.Fatalf("output differs: %d bytes, want %d; first difference at %d (%d cuts, %d reconnects)", len(got), len(data), i, cuts, res.Reconnects)
			}
			if res.ExitCode != 0 || res.Reconnects < 10 {
				t.Fatalf("exit %d after %d reconnects (%d cuts): want 0 and many reconnects", res.ExitCode, res.Reconnects, cuts)
			}
			t.Logf("%d bytes intact over %d reconnects", len(got), res.Reconnects)
		})
	}
}

func TestStalledConnectionIsReplaced(t *testing.T) {
	s := startShim(t)
	var out syncbuf.Buffer
	var mu sync.Mutex
	var disconnects []error
	stalled := make(chan struct{}, 1)
	o := fastOpts(&out)
	o.StallTimeout = 300 * time.Millisecond
	o.Events = func(ev client.Event) {
		if ev.Kind == client.EventDisconnected {
			mu.Lock()
			disconnects = append(disconnects, ev.Err)
			mu.Unlock()
			select {
			case stalled <- struct{}{}:
			default:
			}
		}
	}
	// The script prints b only once the test lets it, after the shim was
	// stopped and started again: however slow the machine, the job is
	// still running while the shim is stopped.
	flag := filepath.Join(t.TempDir(), "go-on")
	body := fmt.Sprintf("echo a\nwhile [ ! -e %s ]; do sleep 0.05; done\necho b\n", flag)
	go func() {
		out.WaitFor(t, "a\n", 30*time.Second)
		mu.Lock()
		before := len(disconnects)
		mu.Unlock()
		// A stopped shim writes nothing, not even ping answers; it stays
		// stopped until the session gave up on the connection.
		_ = syscall.Kill(s.Pid(), syscall.SIGSTOP)
		deadline := time.After(30 * time.Second)
		for waiting := true; waiting; {
			select {
			case <-stalled:
				mu.Lock()
				waiting = len(disconnects) == before
				mu.Unlock()
			case <-deadline:
				waiting = false
			}
		}
		_ = syscall.Kill(s.Pid(), syscall.SIGCONT)
		_ = os.WriteFile(flag, nil, 0o644)
	}()
	res, err := client.Run(context.Background(), s, client.Job{Scripts: []string{script(t, "a.sh", body)}}, o)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != "a\nb\n" || res.Reconnects == 0 {
		t.Fatalf("output %q after %d reconnects", out.String(), res.Reconnects)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(disconnects) == 0 || !strings.Contains(disconnects[0].Error(), "stalled") {
		t.Fatalf("disconnects %v, want a stall first", disconnects)
	}
}

func TestAttachFollowsAJobSubmittedElsewhere(t *testing.T) {
	s := startShim(t)
	job := protocol.Command{Cmd: protocol.CmdJob, ID: "elsewhere", Scripts: []string{script(t, "a.sh", "echo one; sleep 0.3; printf two; exit 5\n")}}
	c, err := s.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	line, _ := protocol.AppendCommand(nil, job)
	if _, err := c.Write(line); err != nil {
		t.Fatal(err)
	}
	// The submitting process is gone once the shim began the job.
	stop := time.AfterFunc(30*time.Second, func() { c.Close() })
	var seen []byte
	buf := make([]byte, 4096)
	for !bytes.Contains(seen, []byte(`"job":"elsewhere"`)) {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("waiting for the job's begin record: %v (read %q)", err, seen)
		}
		seen = append(seen, buf[:n]...)
	}
	stop.Stop()
	c.Close()
	var out syncbuf.Buffer
	res, err := client.Attach(context.Background(), s, 0, fastOpts(&out))
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != "one\ntwo" || res.ExitCode != 5 || len(res.Statuses) != 1 {
		t.Fatalf("output %q result %+v", out.String(), res)
	}
	// Continuing from an offset replays only what follows it.
	var tail syncbuf.Buffer
	from := int64(0)
	for _, l := range bytes.SplitAfter(mustRecords(t, s), []byte("\n")) {
		if bytes.HasPrefix(l, []byte("o ")) {
			from += int64(len(l))
			break
		}
		from += int64(len(l))
	}
	res2, err := client.Attach(context.Background(), s, from, fastOpts(&tail))
	if err != nil || tail.String() != "two" || res2.ExitCode != 5 {
		t.Fatalf("attach from %d: %q %+v %v", from, tail.String(), res2, err)
	}
}

// mustRecords returns the shim's whole record stream from its spool file.
func mustRecords(t *testing.T, s interface{ Pid() int }) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(spoolDir(t, s.Pid()), "records"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// With MemoryReplay the shim keeps only its memory window, far smaller
// than the job's output, and output written while no connection is
// attached waits in the pipe: a connection cut at a random point while the
// script prints as fast as it can loses and repeats nothing, however long
// the reconnect takes (100 ms here). Each cut comes after the session
// caught up with the previous reconnect (half a window's worth of output
// later, or more), as the stall detector of tether run --local replaces a
// connection: cuts in a row during replays can outrun any window.
func TestMemoryReplayResumesAfterRandomCuts(t *testing.T) {
	const window = local.MemoryReplayBytes
	// 64 MiB of text lines as fast as cat writes them: in the 100 ms
	// each reconnect takes the shim would run far past the window if its
	// output were dropped.
	path, data := textFile(t, 8<<20)
	data = bytes.Repeat(data, 8)
	body := fmt.Sprintf("for i in $(seq 8); do cat %s; done\n", path)
	s := startShimConfig(t, local.Config{MemoryReplay: true})
	out := &countingWriter{}
	stop := make(chan struct{})
	cuts := 0
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(3, 7))
		for {
			next := out.n.Load() + window/2 + int64(r.IntN(window/2))
			for out.n.Load() < next {
				select {
				case <-stop:
					return
				case <-time.After(200 * time.Microsecond):
				}
			}
			s.Cut()
			cuts++
		}
	}()
	// A new connection reads what waited in the pipe before the answer to
	// its resume command: fastOpts' timeouts leave a loaded machine the
	// time that takes. Pings come at the default interval: the shim
	// answers each only after the output write in progress (a loaded
	// machine drains a pipeful in a good part of a second), so pings every
	// 50 ms pile up in its stdin, and a reconnect's resume command waited
	// behind them while the new connection dropped all it read, until the
	// shim ran past its window.
	opts := fastOpts(nil)
	opts.Output = out
	opts.PingInterval = client.DefaultPingInterval
	res, err := client.Run(context.Background(), slowReconnect{s, new(atomic.Int32)}, client.Job{Scripts: []string{script(t, "big.sh", body)}}, opts)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("Run after %d cuts: %v", cuts, err)
	}
	// The shim's arguments are read once it answered: while it starts
	// (and while it executes itself again with one P) /proc shows no
	// arguments.
	if args, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", s.Pid())); err != nil || bytes.Contains(args, []byte("spool-dir")) ||
		!bytes.Contains(args, []byte("--replay-bytes="+strconv.Itoa(window))) {
		t.Fatalf("shim arguments %q (%v): want no spool directory and a %d-byte window", args, err, window)
	}
	got := out.buf.Bytes()
	if len(got) != len(data) || sha256.Sum256(got) != sha256.Sum256(data) {
		t.Fatalf("output differs: %d bytes, want %d (%d cuts, %d reconnects)", len(got), len(data), cuts, res.Reconnects)
	}
	if res.ExitCode != 0 || res.Reconnects < 3 {
		t.Fatalf("exit %d after %d reconnects (%d cuts): want 0 and several reconnects", res.ExitCode, res.Reconnects, cuts)
	}
	t.Logf("%d bytes intact over %d reconnects", len(got), res.Reconnects)
}

// slowReconnect is a local shim whose every connection after the first
// takes 100 ms to be made.
type slowReconnect struct {
	*local.Shim
	connects *atomic.Int32
}

func (s slowReconnect) Connect(ctx context.Context) (client.Conn, error) {
	if s.connects.Add(1) > 1 {
		time.Sleep(100 * time.Millisecond)
	}
	return s.Shim.Connect(ctx)
}

// textFile writes size bytes of lines of random length and letters and
// returns its path and content.
func textFile(t *testing.T, size int) (string, []byte) {
	t.Helper()
	r := rand.New(rand.NewPCG(5, 9))
	data := make([]byte, size)
	for i := range data {
		if r.IntN(100) == 0 {
			data[i] = '\n'
		} else {
			data[i] = 'a' + byte(r.IntN(26))
		}
	}
	p := filepath.Join(t.TempDir(), "text")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, data
}

// countingWriter keeps what is written and counts it for another goroutine.
type countingWriter struct {
	buf bytes.Buffer
	n   atomic.Int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	w.n.Add(int64(len(p)))
	return len(p), nil
}
