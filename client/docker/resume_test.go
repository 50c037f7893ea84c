package docker_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/docker"
)

// cutProxy sits between the client and the engine's socket and cuts
// hijacked stream connections on purpose: the first attaches after a
// number of bytes from the engine (mid-output, usually mid-frame), and the
// first exec sessions (the command channel) after a delay.
type cutProxy struct {
	target string
	ln     net.Listener

	attachCuts   atomic.Int32 // attach connections still to cut
	attachAfter  int64        // bytes engine→client before an attach is cut
	execCuts     atomic.Int32 // exec connections still to cut
	execAfter    time.Duration
	attachesCut  atomic.Int32
	execsCut     atomic.Int32
	attachesSeen atomic.Int32

	wg sync.WaitGroup
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{target: target, ln: ln}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) host() string { return "unix://" + p.ln.Addr().String() }

func (p *cutProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.handle(c)
		}()
	}
}

// handle relays one connection, deciding from its first request line
// whether to cut it.
func (p *cutProxy) handle(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		return
	}
	up, err := net.Dial("unix", p.target)
	if err != nil {
		return
	}
	defer up.Close()
	if _, err := up.Write([]byte(line)); err != nil {
		return
	}
	go func() {
		_, _ = io.Copy(up, br)
		_ = up.(*net.UnixConn).CloseWrite()
	}()
	isAttach := strings.Contains(line, "/attach?")
	isExec := strings.Contains(line, "/exec/") && strings.Contains(line, "/start")
	if isAttach {
		p.attachesSeen.Add(1)
	}
	switch {
	case isAttach && p.attachCuts.Add(-1) >= 0:
		_, _ = io.CopyN(c, up, p.attachAfter)
		p.attachesCut.Add(1)
		return // both ends close: the attach is cut mid-stream
	case isExec && p.execCuts.Add(-1) >= 0:
		timer := time.AfterFunc(p.execAfter, func() {
			p.execsCut.Add(1)
			c.Close()
			up.Close()
		})
		defer timer.Stop()
	}
	_, _ = io.Copy(c, up)
}

// resumeJob prints numbered lines for a while, so that cuts land in the
// middle of its output.
func resumeJob() jobCase {
	return jobCase{
		main: []script{{"count.sh", `i=0
while [ $i -lt 3000 ]; do
  echo "line $i"
  i=$((i+1))
  [ $((i % 300)) -eq 0 ] && sleep 0.1
done
printf 'partial tail'`}},
		want:         append(lines("line", 3000), "partial tail"...),
		wantStatuses: []int{0},
	}
}

// TestResumeAfterAttachCut cuts the output connection twice mid-output:
// the session re-attaches and resumes, and the output is exactly the
// script's, with nothing lost or repeated.
func TestResumeAfterAttachCut(t *testing.T) {
	c := needEngine(t)
	p := startCutProxy(t, env.engine.Socket)
	p.attachCuts.Store(2)
	p.attachAfter = 16 << 10
	pc, err := docker.NewClient(p.host())
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	jc := resumeJob()
	o := runDocker(t, pc, jc, client.Options{ReconnectMin: 20 * time.Millisecond})
	checkOutcome(t, "docker via cutting proxy", jc, o)
	if got := p.attachesCut.Load(); got != 2 {
		t.Errorf("the proxy cut %d attach connections, want 2", got)
	}
	if o.res.Reconnects < 2 {
		t.Errorf("Reconnects = %d, want at least 2", o.res.Reconnects)
	}
	checkGone(t, c, o.ctID)
}

// TestResumeAfterCommandChannelCut cuts the command channel (the exec
// session writing into the shim's FIFO) while the job runs: the session
// notices, reconnects with a fresh attach and exec, and resumes exactly.
func TestResumeAfterCommandChannelCut(t *testing.T) {
	c := needEngine(t)
	p := startCutProxy(t, env.engine.Socket)
	p.execCuts.Store(1)
	p.execAfter = 300 * time.Millisecond
	pc, err := docker.NewClient(p.host())
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	jc := resumeJob()
	o := runDocker(t, pc, jc, client.Options{ReconnectMin: 20 * time.Millisecond})
	checkOutcome(t, "docker via cutting proxy", jc, o)
	if got := p.execsCut.Load(); got != 1 {
		t.Errorf("the proxy cut %d exec connections, want 1", got)
	}
	if o.res.Reconnects < 1 {
		t.Errorf("Reconnects = %d, want at least 1", o.res.Reconnects)
	}
	if !bytes.HasSuffix(o.out, []byte("partial tail")) {
		t.Errorf("output does not end with the partial tail")
	}
	checkGone(t, c, o.ctID)
}
