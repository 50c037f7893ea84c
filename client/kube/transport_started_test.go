package kube_test

import (
	"context"
	"errors"
	"net/http"
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

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// startedTransport is a transport to pod whose container was seen to
// start, counting the pod GETs it makes.
func startedTransport(t *testing.T, e *env, pod string) (*kube.Transport, *atomic.Int32) {
	t.Helper()
	var gets atomic.Int32
	cfg := e.srv.RESTConfig("")
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/pods/"+pod) {
				gets.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr := &kube.Transport{Config: cfg, Client: clientset.Wrap(cs), Namespace: ns, Pod: pod, Container: kube.BuildContainer,
		Options: kube.TransportOptions{Logger: testLogger(t), ConnectTimeout: 3 * time.Second}}
	kube.MarkStarted(tr)
	return tr, &gets
}

// Right after WaitRunning saw the container start, the first attach needs
// no look at the pod first.
func TestFirstConnectAfterStartReadsNoPod(t *testing.T) {
	e := newEnv(t, attachserver.Options{})
	e.shim(t, "fresh")
	tr, gets := startedTransport(t, e, "fresh")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := &syncbuf.Buffer{}
	res, err := client.Run(ctx, tr, client.Job{Scripts: []string{e.script(t, "s.sh", "echo hi\n")}}, sessionOptions(t, out, &eventLog{}))
	if err != nil || res.ExitCode != 0 || string(out.Bytes()) != "hi\n" {
		t.Fatalf("Run: %v, exit %d, output %q", err, res.ExitCode, out.Bytes())
	}
	if n := gets.Load(); n != 0 {
		t.Fatalf("%d pod GETs; want none", n)
	}
}

// A container that ended after it was seen to start: the first attach
// fails, and the pod says why (the shim is gone, with its exit code).
func TestFirstConnectAfterStartFindsTheShimGone(t *testing.T) {
	e := newEnv(t, attachserver.Options{})
	c := e.shim(t, "ended")
	c.Kill()
	tr, gets := startedTransport(t, e, "ended")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := tr.Connect(ctx)
	var ended *kube.ContainerEndedError
	if !errors.Is(err, client.ErrShimGone) || !errors.As(err, &ended) || ended.ExitCode != 137 {
		t.Fatalf("Connect: %v; want ErrShimGone with the container's end (exit code 137)", err)
	}
	if n := gets.Load(); n == 0 {
		t.Fatalf("no pod GET; the failed attach should be explained by the pod")
	}
}
