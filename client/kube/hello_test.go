package kube_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
	"github.com/tether-ci/tether/internal/testing/attachserver"
)

// Pod.Hello reads a real shim's hello from its container log, past the
// diagnostics the shim wrote to stderr before it (a merged log), with
// how its command aliases resolved.
func TestPodHelloFromLog(t *testing.T) {
	e := newEnv(t, attachserver.Options{})
	c := e.shim(t, "hello", "--command-alias=runner=sh", "--command-alias=absent=no-such-command-here")
	deadline := time.Now().Add(time.Minute)
	for !bytes.Contains(c.Log(), []byte("\nh 0 ")) {
		if time.Now().After(deadline) {
			t.Fatalf("no diagnostic line, then the hello, in the shim's log within a minute:\n%s", c.Log())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cs, err := kubernetes.NewForConfig(e.srv.RESTConfig(""))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pod := &kube.Pod{Client: clientset.Wrap(cs), Namespace: ns, Name: "hello"}
	h, err := pod.Hello(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a := h.CommandAliases
	if h.Protocol == 0 || len(a) != 2 || a[0].Name != "runner" || !a[0].Linked || a[0].Path == "" || !a[1].Missing() {
		t.Fatalf("hello %+v", h)
	}

	pod.Container = "no-such-container"
	if _, err := pod.Hello(ctx); err == nil {
		t.Fatal("the hello of a container that does not exist")
	}
}
