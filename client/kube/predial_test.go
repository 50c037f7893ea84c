package kube_test

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/testing/attachserver"
	"github.com/tether-ci/tether/internal/testing/faultproxy"
	"github.com/tether-ci/tether/internal/testing/syncbuf"
)

// TestPredialCarriesTheAttach: a connection dialed before the attach knew
// its pod (as Claim dials it during its list) carries the WebSocket
// attach's upgrade, so the attach makes no connection of its own, and the
// job runs over it; one dialed to another server is not used (the attach
// dials its own), and release closes it.
func TestPredialCarriesTheAttach(t *testing.T) {
	e := newEnv(t, attachserver.Options{})
	e.shim(t, "pre")
	e.shim(t, "pre2")
	script := e.script(t, "echo.sh", "echo over the pre-dialed connection\n")
	run := func(t *testing.T, tr *kube.Transport) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var out syncbuf.Buffer
		res, err := client.Run(ctx, tr, client.Job{Scripts: []string{script}}, client.Options{Output: &out})
		if err != nil || res.ExitCode != 0 || out.String() != "over the pre-dialed connection\n" {
			t.Fatalf("Run: %v, exit %d, output %q", err, res.ExitCode, out.String())
		}
	}
	t.Run("same server", func(t *testing.T) {
		proxy, err := faultproxy.Start(strings.TrimPrefix(e.srv.URL, "http://"), faultproxy.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer proxy.Close()
		tr := e.transport(t, "http://"+proxy.Addr(), "pre", kube.ProtocolWebSocket)
		tr.Options.AttachFirst = true
		pd := kube.StartPredial(context.Background(), tr.Config)
		if pd == nil {
			t.Fatal("no pre-dial for a plain server without a proxy")
		}
		for end := time.Now().Add(10 * time.Second); proxy.Accepted() != 1; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatal("the pre-dial made no connection within 10s")
			}
		}
		kube.UsePredial(tr, pd)
		run(t, tr)
		if n := proxy.Accepted(); n != 1 {
			t.Fatalf("the server accepted %d connections, want 1: the pre-dialed one carrying the attach", n)
		}
		kube.ReleasePredial(pd) // taken: nothing to close
	})
	t.Run("another server", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		closed := make(chan struct{})
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, c) // until the client closes it
			close(closed)
		}()
		pd := kube.StartPredial(context.Background(), &rest.Config{Host: "http://" + ln.Addr().String()})
		tr := e.transport(t, "", "pre2", kube.ProtocolWebSocket)
		tr.Options.AttachFirst = true
		kube.UsePredial(tr, pd)
		run(t, tr) // over its own connection: the other server speaks no HTTP
		kube.ReleasePredial(pd)
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Fatal("the unused pre-dialed connection was not closed by release")
		}
	})
}

// TestPredialReleaseWaitsForTheAttach: a claimed pod's pre-dialed
// connection is closed only once the attach that could take it returned.
func TestPredialReleaseWaitsForTheAttach(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	closed := make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, c)
		close(closed)
	}()
	pd := kube.StartPredial(context.Background(), &rest.Config{Host: "http://" + ln.Addr().String()})
	attached := make(chan struct{})
	kube.ReleasePredialAfter(pd, attached)
	select {
	case <-closed:
		t.Fatal("closed before the attach returned")
	case <-time.After(200 * time.Millisecond):
	}
	close(attached)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("not closed after the attach returned without it")
	}
}
