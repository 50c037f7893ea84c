package kube_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
	"github.com/tether-ci/tether/internal/testing/attachserver"
	"github.com/tether-ci/tether/internal/testing/syncbuf"
)

// connectProxy is an HTTP CONNECT proxy on 127.0.0.1 that counts the
// tunnels it opened.
type connectProxy struct {
	ln      net.Listener
	tunnels atomic.Int64
}

func startConnectProxy(t *testing.T) *connectProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &connectProxy{ln: ln}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *connectProxy) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	if req.Method != http.MethodConnect {
		_, _ = io.WriteString(c, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
		return
	}
	up, err := net.Dial("tcp", req.Host)
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	defer up.Close()
	p.tunnels.Add(1)
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, br); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

// Behind an HTTPS proxy, the WebSocket dialer of client-go's older
// gorilla/websocket releases fails before any upgrade with "proxy: unknown
// scheme: https" while SPDY goes through the proxy (kubernetes issue
// 126134); kubectl falls back to SPDY on that error. The test's proxy
// function answers the WebSocket dial exactly so and sends SPDY through a
// real CONNECT proxy: the default protocol must still run the job, over
// SPDY through the proxy.
func TestAutoFallsBackToSPDYOnHTTPSProxyError(t *testing.T) {
	e := newEnv(t, attachserver.Options{})
	e.shim(t, "proxied")
	run := e.script(t, "run.sh", "echo through the proxy\n")
	proxy := startConnectProxy(t)

	cfg := e.srv.RESTConfig("")
	cfg.Proxy = func(r *http.Request) (*url.URL, error) {
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			return nil, errors.New("proxy: unknown scheme: https")
		}
		return &url.URL{Scheme: "http", Host: proxy.ln.Addr().String()}, nil
	}
	cs, err := kubernetes.NewForConfig(e.srv.RESTConfig(""))
	if err != nil {
		t.Fatal(err)
	}
	tr := &kube.Transport{Config: cfg, Client: clientset.Wrap(cs), Namespace: ns, Pod: "proxied", Container: kube.BuildContainer,
		Options: kube.TransportOptions{Logger: testLogger(t), ConnectTimeout: 3 * time.Second}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := &syncbuf.Buffer{}
	opts := sessionOptions(t, out, &eventLog{})
	opts.ReconnectTimeout = 5 * time.Second
	res, err := client.Run(ctx, tr, client.Job{Scripts: []string{run}}, opts)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run: %v (exit %d); want the job run over SPDY through the proxy", err, res.ExitCode)
	}
	if got := string(out.Bytes()); got != "through the proxy\n" {
		t.Fatalf("output %q", got)
	}
	if e.srv.AttachRequests("spdy") == 0 || proxy.tunnels.Load() == 0 {
		t.Fatalf("%d SPDY attach requests, %d proxy tunnels; want the SPDY attach through the proxy",
			e.srv.AttachRequests("spdy"), proxy.tunnels.Load())
	}
	if n := e.srv.AttachRequests("websocket"); n > 0 {
		t.Fatalf("%d WebSocket attach requests reached the server past a failing proxy", n)
	}
}
