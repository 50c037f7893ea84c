package kube

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
)

// With LazyDisruptionWatch the pod is neither read nor watched while the
// attach works; once an attach fails the watch starts, and a disruption it
// then reads ends the job with what Kubernetes did, at once.
func TestLazyDisruptionWatch(t *testing.T) {
	p := disruptedPod()
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: ReasonEvictionByEvictionAPI, Message: "Eviction API: evicting"})
	p.APIVersion, p.Kind = "v1", "Pod"
	body, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	// The pod reads answer with the pod; every attach fails as one a
	// later attempt may pass does.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/api/v1/namespaces/ci/pods/job" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
			return
		}
		http.Error(w, "the kubelet is busy", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	tr := &Transport{Config: &rest.Config{Host: srv.URL}, Namespace: "ci", Pod: "job",
		Options: TransportOptions{AttachFirst: true, LazyDisruptionWatch: true, ConnectTimeout: time.Second}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err = Run(ctx, tr, client.Job{ID: client.NewJobID("lazy"), Scripts: []string{"/s"}}, client.Options{Output: io.Discard, ReconnectTimeout: 15 * time.Second})
	var d *DisruptedError
	if !errors.As(err, &d) || d.Reason != ReasonEvictionByEvictionAPI || time.Since(start) > 10*time.Second {
		t.Fatalf("Run: %v after %s; want the eviction, long before the reconnect timeout", err, time.Since(start))
	}
}

// A lazy watch that never began costs nothing and ends at once.
func TestLazyDisruptionWatchNeverBegun(t *testing.T) {
	cs := fake.NewClientset(disruptedPod())
	w := newDisruptionWatch(clientset.Wrap(cs), "ci", "job", slog.New(slog.DiscardHandler))
	done := make(chan struct{})
	go func() { defer close(done); w.end() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("end waited for a watch that never began")
	}
	if a := cs.Actions(); len(a) != 0 {
		t.Errorf("requests %v; want none", a)
	}
}
