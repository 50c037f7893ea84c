package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// kubeBareCommand is the harness's argument that makes it the floor of
// the concurrent jobs: the same scripts in bare pods of the same image,
// created and followed to completion by this one process.
const kubeBareCommand = "kube-bare"

// requestCounter counts the API requests a process makes, by verb and
// resource ("watch pods", "create pods/attach", …).
type requestCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		c.mu.Lock()
		if c.n == nil {
			c.n = map[string]int{}
		}
		c.n[requestKind(r)]++
		c.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

func (c *requestCounter) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// requestKind names a request by its verb and resource: the path's
// resource after the namespace (or after the API version), with the
// subresource; a GET with watch=true is a watch, a GET of a collection a
// list.
func requestKind(r *http.Request) string {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// /api/v1/namespaces/NS/pods/NAME/attach, /apis/G/V/namespaces/NS/R/...
	i := 2
	if len(parts) > 0 && parts[0] == "apis" {
		i = 3
	}
	if i+1 < len(parts) && parts[i] == "namespaces" {
		i += 2
	}
	rest := parts[min(i, len(parts)):]
	resource := strings.Join(rest, "/")
	named := len(rest) >= 2
	if len(rest) >= 3 {
		resource = rest[0] + "/" + rest[2]
	} else if len(rest) >= 1 {
		resource = rest[0]
	}
	verb := strings.ToLower(r.Method)
	switch {
	case r.Method == http.MethodGet && r.URL.Query().Get("watch") == "true":
		verb = "watch"
	case r.Method == http.MethodGet && !named:
		verb = "list"
	case r.Method == http.MethodPost:
		verb = "create"
	}
	return verb + " " + resource
}

// formatRequests renders request counts per job, biggest first.
func formatRequests(counts map[string]int, jobs int) (perJob float64, detail string) {
	total := 0
	keys := make([]string, 0, len(counts))
	for k, v := range counts {
		total += v
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		if counts[keys[a]] != counts[keys[b]] {
			return counts[keys[a]] > counts[keys[b]]
		}
		return keys[a] < keys[b]
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(counts[k])/float64(jobs)))
	}
	return float64(total) / float64(jobs), strings.Join(parts, ", ")
}

// bareLabel marks the bare pods of one kube-bare run.
const bareLabel = "tether-bench-bare"

// kubeBare runs n bare pods at once, each the concurrent job's script as
// `sh -c` in the build image: create, follow (one informer for all of them)
// until it ends, read its log, delete. It prints a JSON kubeJobsReport on w.
func kubeBare(ctx context.Context, kubeconfig string, opts fleetOptions, n int, w io.Writer) error {
	k, err := newKubeEnv(kubeconfig, opts.images)
	if err != nil {
		return err
	}
	run := randomName("r")
	// One informer (list + watch, relisting when the watch breaks) for
	// all the pods, as Tether shares one per namespace.
	sel := bareLabel + "=" + run
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = sel
			return k.cs.CoreV1().Pods(k.ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return k.cs.CoreV1().Pods(k.ns).Watch(ctx, o)
		},
	}, &corev1.Pod{}, 0, cache.Indexers{})
	var mu sync.Mutex
	ended := map[string]chan corev1.PodPhase{}
	notify := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || (p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed) {
			return
		}
		mu.Lock()
		if ch := ended[p.Name]; ch != nil {
			ch <- p.Status.Phase
			delete(ended, p.Name)
		}
		mu.Unlock()
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(_, obj any) { notify(obj) },
	}); err != nil {
		return fmt.Errorf("watch the bare pods: %w", err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go inf.Run(stop)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return errors.New("watch the bare pods: the informer did not sync")
	}
	return runFleetJobs(k, n, opts, w, func(i int) error {
		script, want := concurrentScript(i, 0)
		name := fmt.Sprintf("bench-bare-%s-%d", run, i)
		ch := make(chan corev1.PodPhase, 1)
		mu.Lock()
		ended[name] = ch
		mu.Unlock()
		got, err := bareJob(ctx, k, name, run, script, ch)
		switch {
		case err != nil:
			return fmt.Errorf("bare pod %d: %w", i, err)
		case !bytes.Equal(got, want):
			return fmt.Errorf("bare pod %d: log differs (%d bytes, want %d)", i, len(got), len(want))
		}
		return nil
	})
}

// bareJob creates one bare pod, waits for the watch to report its end,
// reads its log and deletes it.
func bareJob(ctx context.Context, k *kubeEnv, name, run string, script []byte, ended <-chan corev1.PodPhase) ([]byte, error) {
	pods := k.cs.CoreV1().Pods(k.ns)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{bareLabel: run}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{
				Name: "job", Image: k.images.build, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", string(script)},
			}},
		},
	}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = pods.Delete(dctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	}()
	select {
	case phase := <-ended:
		if phase != corev1.PodSucceeded {
			return nil, fmt.Errorf("the pod ended %s", phase)
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	b, err := pods.GetLogs(name, &corev1.PodLogOptions{Container: "job"}).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the log: %w", err)
	}
	return b, nil
}
