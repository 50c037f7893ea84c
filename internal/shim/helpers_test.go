package shim_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tether-ci/tether/internal/testing/testbin"
	"github.com/tether-ci/tether/protocol"
)

// shimBin is the tether-shim binary built once for the package's tests.
var shimBin string

func TestMain(m *testing.M) {
	if runHelper() {
		os.Exit(0)
	}
	os.Exit(testbin.Main(m, map[string]string{"tether-shim": testbin.Shim}, func(dir string) {
		shimBin = filepath.Join(dir, "tether-shim")
	}))
}

// requireRoot fails in CI and skips elsewhere when the test needs root
// (new PID namespaces): that is a platform limit, not a missing tool.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("this test needs root for a new PID namespace, and CI runs as root")
	}
	t.Skip("needs root to create a PID namespace")
}

// rec is a decoded record with its own copy of the payload and arrival time.
type rec struct {
	protocol.Record
	at time.Time
}

func (r rec) status(t *testing.T) protocol.Status {
	t.Helper()
	var s protocol.Status
	mustJSON(t, r.Payload, &s)
	return s
}

// shimProc is a tether-shim running as PID 1 of its own PID namespace.
type shimProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *bytes.Buffer

	mu      sync.Mutex
	records []rec
	raw     bytes.Buffer // the whole stdout
	readErr error
	changed chan struct{}
	exited  chan struct{}
	exitErr error
	readEnd chan struct{} // closed when the stdout reader has stopped
}

type shimOpt func(*exec.Cmd)

func asUser(uid, gid uint32) shimOpt {
	return func(c *exec.Cmd) { c.SysProcAttr.Credential = &syscall.Credential{Uid: uid, Gid: gid} }
}

// startShim starts the shim in a new PID namespace (it is PID 1 there).
func startShim(t *testing.T, args []string, opts ...shimOpt) *shimProc {
	t.Helper()
	requireRoot(t)
	cmd := exec.Command(shimBin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "TETHER_LOG_LEVEL=debug", "TETHER_TEST_BIN="+self)
	for _, o := range opts {
		o(cmd)
	}
	p := &shimProc{t: t, cmd: cmd, stderr: &bytes.Buffer{}, changed: make(chan struct{}, 1),
		exited: make(chan struct{}), readEnd: make(chan struct{})}
	cmd.Stderr = &lockedWriter{w: p.stderr, mu: &p.mu}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	// The test's own pipe, not StdoutPipe: cmd.Wait closes a StdoutPipe
	// as soon as the process has exited, and a reader that had not read
	// the shim's last records yet (a loaded machine) then lost them. This
	// pipe's reader reads to its end whenever Wait returns.
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = stdoutW
	p.stdin = stdin
	err = cmd.Start()
	stdoutW.Close()
	if err != nil {
		stdout.Close()
		t.Fatalf("start shim: %v", err)
	}
	go func() {
		defer close(p.readEnd)
		defer stdout.Close()
		p.read(stdout)
	}()
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			p.mu.Lock()
			t.Logf("shim stderr:\n%s", p.stderr.String())
			t.Logf("shim stdout (%d bytes):\n%s", p.raw.Len(), tail(p.raw.Bytes(), 4000))
			p.mu.Unlock()
		}
	})
	return p
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func (p *shimProc) read(stdout io.Reader) {
	dec := protocol.NewDecoder(io.TeeReader(stdout, &lockedWriter{w: &p.raw, mu: &p.mu}))
	var next int64
	for {
		r, err := dec.Next()
		p.mu.Lock()
		if err != nil {
			p.readErr = err
			p.mu.Unlock()
			p.notify()
			return
		}
		if r.Type.Sequenced() {
			if r.Seq != next {
				p.readErr = fmt.Errorf("record at offset %d, want %d", r.Seq, next)
			}
			next = r.Next()
		}
		r.Payload = append([]byte(nil), r.Payload...)
		p.records = append(p.records, rec{Record: r, at: time.Now()})
		p.mu.Unlock()
		p.notify()
	}
}

func (p *shimProc) notify() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// send writes command lines to the shim's stdin.
func (p *shimProc) send(cmds ...protocol.Command) {
	p.t.Helper()
	var b []byte
	for _, c := range cmds {
		var err error
		if b, err = protocol.AppendCommand(b, c); err != nil {
			p.t.Fatal(err)
		}
	}
	p.sendRaw(string(b))
}

func (p *shimProc) sendRaw(s string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, s); err != nil {
		p.t.Fatalf("write shim stdin: %v", err)
	}
}

func run(path string) protocol.Command { return protocol.Command{Cmd: protocol.CmdRun, Script: path} }

// patience is the least time a wait of these tests allows: a wait's
// timeout only bounds how long a failing test takes, and a 2-core machine
// busy with -race builds and other packages' tests can hold a shim or its
// script back for seconds.
const patience = time.Minute

// waitRecord waits until a record matching match has arrived after index
// from, and returns it with its index. It fails the test after timeout
// (at least patience).
func (p *shimProc) waitRecord(from int, timeout time.Duration, match func(rec) bool) (rec, int) {
	p.t.Helper()
	timeout = max(timeout, patience)
	deadline := time.After(timeout)
	for {
		p.mu.Lock()
		for i := from; i < len(p.records); i++ {
			if match(p.records[i]) {
				r := p.records[i]
				p.mu.Unlock()
				return r, i
			}
		}
		readErr := p.readErr
		p.mu.Unlock()
		if readErr != nil && !errors.Is(readErr, io.EOF) {
			p.t.Fatalf("record stream broken: %v", readErr)
		}
		select {
		case <-p.changed:
		case <-deadline:
			p.t.Fatalf("no matching record within %v", timeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func ofType(t protocol.Type) func(rec) bool { return func(r rec) bool { return r.Type == t } }

// waitStatus waits for the status record of script.
func (p *shimProc) waitStatus(script string, timeout time.Duration) protocol.Status {
	p.t.Helper()
	r, _ := p.waitRecord(0, timeout, func(r rec) bool {
		return r.Type == protocol.TypeStatus && strings.Contains(string(r.Payload), strconv.Quote(script))
	})
	return r.status(p.t)
}

// waitExit waits (at least patience) for the process to exit and returns
// its exit code and the final record.
func (p *shimProc) waitExit(timeout time.Duration) (int, protocol.Exit) {
	p.t.Helper()
	timeout = max(timeout, patience)
	select {
	case <-p.exited:
	case <-time.After(timeout):
		p.t.Fatalf("shim did not exit within %v", timeout)
	}
	// Its stdout ends with it (every process of its PID namespace ends
	// when it does): the reader has every record then.
	select {
	case <-p.readEnd:
	case <-time.After(30 * time.Second):
		p.t.Fatalf("the shim's stdout did not end within 30s of its exit")
	}
	r, _ := p.waitRecord(0, time.Second, ofType(protocol.TypeExit))
	var x protocol.Exit
	mustJSON(p.t, r.Payload, &x)
	code := 0
	var ee *exec.ExitError
	if errors.As(p.exitErr, &ee) {
		code = ee.ExitCode()
	}
	p.mu.Lock()
	last := p.records[len(p.records)-1]
	p.mu.Unlock()
	if last.Type != protocol.TypeExit {
		p.t.Errorf("last record is %s, want the final x record", last.Type)
	}
	return code, x
}

// output returns the concatenated output bytes of all records so far.
func (p *shimProc) output() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []byte
	for _, r := range p.records {
		if r.Type.IsOutput() {
			out = append(out, r.Payload...)
		}
	}
	return out
}

// pid is the shim's pid in the test's namespace.
func (p *shimProc) pid() int { return p.cmd.Process.Pid }

func (p *shimProc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal shim: %v", err)
	}
}

// script writes an executable script into dir and returns its path.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// descendants returns the pids below root in the process tree with their
// state letters (dumb-init's pid-tree helper).
func descendants(t *testing.T, root int) map[int]string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	parent := map[int]int{}
	state := map[int]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		parent[pid] = ppid
		state[pid] = f[0]
	}
	out := map[int]string{}
	for pid := range parent {
		for p := parent[pid]; p > 1; p = parent[p] {
			if p == root {
				out[pid] = state[pid]
				break
			}
		}
	}
	return out
}

// comm is the command name of process pid ("" once it is gone).
func comm(pid int) string {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// eventually polls cond until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
