//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// apiProxy is a plain-HTTP front of the node's API server on loopback
// that forwards every request as the test's admin (its client
// certificate), attach upgrades included, so that a test sees the
// requests of a CLI and can hold one back: Hold is called before an
// attach request is forwarded.
type apiProxy struct {
	// Kubeconfig is a kubeconfig for the proxy (namespace ns).
	Kubeconfig string
	// Hold, when set, is called with the namespace and pod of each attach
	// request before it is forwarded.
	Hold func(ctx context.Context, ns, pod string)

	mu sync.Mutex
	// updated is closed per pod once an update (PUT) of it succeeded.
	updated map[string]chan struct{}
}

// startAPIProxy starts the proxy; it stops when the test ends.
func (c *Cluster) startAPIProxy(t *testing.T, ns string) *apiProxy {
	t.Helper()
	up, err := url.Parse(c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	tlsConfig, err := rest.TLSConfigFor(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	p := &apiProxy{updated: map[string]chan struct{}{}}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(up) },
		// HTTP/1.1 only: an attach is an Upgrade.
		Transport: &http.Transport{TLSClientConfig: tlsConfig, TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}},
		ModifyResponse: func(resp *http.Response) error {
			if resp.Request.Method == http.MethodPut && resp.StatusCode == http.StatusOK {
				if _, pod, ok := podPath(resp.Request.URL.Path, ""); ok {
					close(p.updatedChan(pod))
				}
			}
			return nil
		},
		FlushInterval: -1,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ns, pod, ok := podPath(r.URL.Path, "attach"); ok && p.Hold != nil {
			p.Hold(r.Context(), ns, pod)
		}
		rp.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxy"] = &clientcmdapi.Cluster{Server: "http://" + ln.Addr().String()}
	cfg.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy", Namespace: ns}
	cfg.CurrentContext = "proxy"
	p.Kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p.Kubeconfig); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p.Kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// updatedChan is the channel closed once pod was updated.
func (p *apiProxy) updatedChan(pod string) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch, ok := p.updated[pod]
	if !ok {
		ch = make(chan struct{})
		p.updated[pod] = ch
	}
	return ch
}

// waitUpdated waits until an update of pod went through the proxy, or
// timeout; it reports whether one did.
func (p *apiProxy) waitUpdated(ctx context.Context, pod string, timeout time.Duration) bool {
	select {
	case <-p.updatedChan(pod):
		return true
	case <-ctx.Done():
	case <-time.After(timeout):
	}
	return false
}

// podPath parses /api/v1/namespaces/NS/pods/NAME[/SUB] with SUB = sub.
func podPath(path, sub string) (ns, pod string, ok bool) {
	f := strings.Split(strings.Trim(path, "/"), "/")
	if len(f) < 6 || f[0] != "api" || f[1] != "v1" || f[2] != "namespaces" || f[4] != "pods" {
		return "", "", false
	}
	switch {
	case sub == "" && len(f) == 6:
	case sub != "" && len(f) == 7 && f[6] == sub:
	default:
		return "", "", false
	}
	return f[3], f[5], true
}

// deleteBeforeFirstAttach makes the proxy hold the first attach to pod
// until the pod's claim (an update) went through the proxy, then delete
// the pod (grace period 0) and wait until it is gone before the attach is
// forwarded: a warm pod lost between its claim and the job's first
// attach. It returns how many attaches to pod were held (1 once it
// happened).
func (p *apiProxy) deleteBeforeFirstAttach(t *testing.T, c *Cluster, ns, pod string) *atomic.Int32 {
	t.Helper()
	var held atomic.Int32
	p.Hold = func(ctx context.Context, _, name string) {
		if name != pod || held.Add(1) > 1 {
			return
		}
		if !p.waitUpdated(ctx, pod, time.Minute) {
			t.Errorf("the attach to %s came without its claim's update", pod)
			return
		}
		zero := int64(0)
		if err := c.Client.CoreV1().Pods(ns).Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Errorf("delete the claimed pod: %v", err)
			return
		}
		c.WaitFor(ctx, t, "the claimed pod gone", func(ctx context.Context) (bool, error) {
			_, err := c.Client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
			return err != nil, ignoreNotFound(err)
		})
	}
	return &held
}
