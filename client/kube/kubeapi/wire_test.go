package kubeapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tether-ci/tether/client/kube/kubeapi"
	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
)

// recorder is an HTTP server that answers every request with an empty
// object (an empty list, an empty watch) and remembers what it was asked.
type recorder struct {
	mu   sync.Mutex
	reqs []string
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.reqs = append(rec.reqs, fmt.Sprintf("%s %s?%s\nUser-Agent: %s\nAccept: %s\nContent-Type: %s\nbody: %x",
		r.Method, r.URL.Path, r.URL.Query().Encode(), r.UserAgent(), r.Header.Get("Accept"), r.Header.Get("Content-Type"), body))
	rec.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Query().Get("watch") == "true":
	case strings.HasSuffix(r.URL.Path, "/log"):
		_, _ = io.WriteString(w, "log line\n")
	default:
		_, _ = io.WriteString(w, `{"metadata":{"name":"x","resourceVersion":"7"}}`)
	}
}

func (rec *recorder) take() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	r := rec.reqs
	rec.reqs = nil
	return r
}

// Every call of Interface makes the same HTTP request through New as
// through client-go's typed clientset: method, path, query, headers and
// body.
func TestSameRequestsAsClientGo(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	cfg := &rest.Config{Host: srv.URL, UserAgent: "tether-test/1"}
	mine, err := kubeapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	typed, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	theirs := clientset.Wrap(typed)
	five := int64(5)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: "3",
		Labels: map[string]string{"b": "2", "a": "1"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "alpine"}}}}
	calls := map[string]func(ctx context.Context, cs kubeapi.Interface) error{
		"pod get": func(ctx context.Context, cs kubeapi.Interface) error {
			_, err := cs.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{ResourceVersion: "0"})
			return err
		},
		"pod list": func(ctx context.Context, cs kubeapi.Interface) error {
			_, err := cs.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{LabelSelector: "a=1,b!=2", FieldSelector: "metadata.name=p", Limit: 3, TimeoutSeconds: &five})
			return err
		},
		"pod watch": func(ctx context.Context, cs kubeapi.Interface) error {
			w, err := cs.CoreV1().Pods("ns").Watch(ctx, metav1.ListOptions{LabelSelector: "a=1", ResourceVersion: "9", AllowWatchBookmarks: true, TimeoutSeconds: &five})
			if err != nil {
				return err
			}
			for range w.ResultChan() {
			}
			return nil
		},
		"pod create": func(ctx context.Context, cs kubeapi.Interface) error {
			_, err := cs.CoreV1().Pods("ns").Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "tether"})
			return err
		},
		"pod update": func(ctx context.Context, cs kubeapi.Interface) error {
			_, err := cs.CoreV1().Pods("ns").Update(ctx, pod, metav1.UpdateOptions{})
			return err
		},
		"pod delete": func(ctx context.Context, cs kubeapi.Interface) error {
			return cs.CoreV1().Pods("ns").Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: &five, Preconditions: metav1.NewUIDPreconditions("u")})
		},
		"pod ephemeral containers": func(ctx context.Context, cs kubeapi.Interface) error {
			_, err := cs.CoreV1().Pods("ns").UpdateEphemeralContainers(ctx, "p", pod, metav1.UpdateOptions{})
			return err
		},
		"pod log": func(ctx context.Context, cs kubeapi.Interface) error {
			rc, err := cs.CoreV1().Pods("ns").GetLogs("p", &corev1.PodLogOptions{Container: "c", Follow: true, TailLines: &five}).Stream(ctx)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, rc)
			return rc.Close()
		},
		"attach url": func(ctx context.Context, cs kubeapi.Interface) error {
			u := cs.CoreV1().RESTClient().Post().Namespace("ns").Resource("pods").Name("p").SubResource("attach").
				VersionedParams(&corev1.PodAttachOptions{Container: "c", Stdin: true, Stdout: true, Stderr: true}, kubeapi.ParameterCodec()).URL()
			_, err := http.Get(u.String())
			return err
		},
		"event create, list, watch": func(ctx context.Context, cs kubeapi.Interface) error {
			if _, err := cs.CoreV1().Events("ns").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}, Reason: "R"}, metav1.CreateOptions{}); err != nil {
				return err
			}
			if _, err := cs.CoreV1().Events("ns").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Pod"}); err != nil {
				return err
			}
			w, err := cs.CoreV1().Events("ns").Watch(ctx, metav1.ListOptions{ResourceVersion: "4"})
			if err != nil {
				return err
			}
			for range w.ResultChan() {
			}
			return nil
		},
		"secret create, get, update, delete": func(ctx context.Context, cs kubeapi.Interface) error {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Data: map[string][]byte{"k": []byte("v")}}
			if _, err := cs.CoreV1().Secrets("ns").Create(ctx, s, metav1.CreateOptions{}); err != nil {
				return err
			}
			if _, err := cs.CoreV1().Secrets("ns").Get(ctx, "s", metav1.GetOptions{}); err != nil {
				return err
			}
			if _, err := cs.CoreV1().Secrets("ns").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
				return err
			}
			return cs.CoreV1().Secrets("ns").Delete(ctx, "s", metav1.DeleteOptions{})
		},
		"config map create": func(ctx context.Context, cs kubeapi.Interface) error {
			_, err := cs.CoreV1().ConfigMaps("ns").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"a": "b"}}, metav1.CreateOptions{})
			return err
		},
		"node get": func(ctx context.Context, cs kubeapi.Interface) error {
			_, err := cs.CoreV1().Nodes().Get(ctx, "n", metav1.GetOptions{})
			return err
		},
		"pdb create": func(ctx context.Context, cs kubeapi.Interface) error {
			_, err := cs.PolicyV1().PodDisruptionBudgets("ns").Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "d"}}, metav1.CreateOptions{})
			return err
		},
		"reviews": func(ctx context.Context, cs kubeapi.Interface) error {
			if _, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods"}}}, metav1.CreateOptions{}); err != nil {
				return err
			}
			if _, err := cs.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "ns"}}, metav1.CreateOptions{}); err != nil {
				return err
			}
			_, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := call(ctx, theirs); err != nil {
				t.Fatalf("client-go: %v", err)
			}
			want := rec.take()
			if err := call(ctx, mine); err != nil {
				t.Fatalf("kubeapi: %v", err)
			}
			got := rec.take()
			if len(want) == 0 {
				t.Fatal("client-go made no request")
			}
			if strings.Join(got, "\n---\n") != strings.Join(want, "\n---\n") {
				t.Errorf("kubeapi's requests:\n%s\n\nclient-go's:\n%s", strings.Join(got, "\n---\n"), strings.Join(want, "\n---\n"))
			}
		})
	}
}
