package gitlab

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
	gitlab "github.com/tether-ci/tether/integration/gitlab/internal/runnerapi"
)

// fakeAuthorizer answers SelfSubjectAccessReviews: allowed unless the
// "verb resource[/sub]" is denied; fail makes every review fail.
func fakeAuthorizer(t *testing.T, user string, fail error, denied ...string) *fake.Clientset {
	t.Helper()
	cs := fake.NewClientset()
	cs.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if fail != nil {
			return true, nil, fail
		}
		r := a.(k8stesting.CreateAction).GetObject().(*authzv1.SelfSubjectAccessReview)
		ra := r.Spec.ResourceAttributes
		if ra.Namespace != "ci" {
			t.Errorf("review in namespace %q, want ci", ra.Namespace)
		}
		what := ra.Verb + " " + ra.Resource
		if ra.Subresource != "" {
			what += "/" + ra.Subresource
		}
		out := r.DeepCopy()
		out.Status.Allowed = true
		for _, d := range denied {
			if d == what {
				out.Status.Allowed = false
			}
		}
		return true, out, nil
	})
	cs.PrependReactor("create", "selfsubjectreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authnv1.SelfSubjectReview).DeepCopy()
		r.Status.UserInfo.Username = user
		return true, r, nil
	})
	return cs
}

// A Role without pods/attach fails prepare with one message naming the
// identity, the missing verbs, what they are for and the Role to bind;
// missing events only warn; pods/attach needs get or create, not both.
func TestGitLabAccessCheck(t *testing.T) {
	const user = "system:serviceaccount:ci:gitlab-runner"
	cs := fakeAuthorizer(t, user, nil, "get pods/attach", "create pods/attach", "watch events")
	rep, err := checkGitlabAccess(t.Context(), clientset.Wrap(cs), "ci")
	if err != nil {
		t.Fatal(err)
	}
	msg := rep.Err()
	if msg == nil {
		t.Fatal("no error for a Role without pods/attach")
	}
	for _, want := range []string{user, "may not get or create pods/attach (run attaches", "namespace ci", gitlab.RBACFile, "set namespace: in the driver config"} {
		if !strings.Contains(msg.Error(), want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg.Error(), "events") {
		t.Errorf("error %q names an optional permission", msg)
	}
	if w := rep.Warning(); !strings.Contains(w, "may not watch events (prepare streams the pod's events") || strings.Contains(w, "attach") {
		t.Errorf("warning %q: want one about watching events only", w)
	}
	rep, _ = checkGitlabAccess(t.Context(), clientset.Wrap(fakeAuthorizer(t, user, nil, "list events", "watch events")), "ci")
	if w := rep.Warning(); !strings.Contains(w, "may not list and watch events (prepare streams") || rep.Err() != nil {
		t.Errorf("without events: warning %q, error %v", w, rep.Err())
	}

	// Nothing granted: the namespace is the likely mistake.
	rep, _ = checkGitlabAccess(t.Context(), clientset.Wrap(fakeAuthorizer(t, user, nil, "create pods", "get pods", "delete pods",
		"get pods/attach", "create pods/attach", "get pods/log")), "ci")
	if e := rep.Err(); e == nil || !strings.Contains(e.Error(), "is ci the jobs' namespace (namespace: in the driver config)?") {
		t.Errorf("nothing granted: %v", e)
	}

	// Either attach verb is enough; all granted: nothing to say.
	rep, err = checkGitlabAccess(t.Context(), clientset.Wrap(fakeAuthorizer(t, user, nil, "create pods/attach")), "ci")
	if err != nil || rep.Err() != nil || rep.Warning() != "" {
		t.Errorf("WebSocket attach allowed: err %v, report %+v", err, rep)
	}

	// Missing delete: cleanup could never delete a pod.
	rep, _ = checkGitlabAccess(t.Context(), clientset.Wrap(fakeAuthorizer(t, "", nil, "delete pods")), "ci")
	if e := rep.Err(); e == nil || !strings.Contains(e.Error(), "the runner's Kubernetes identity may not delete pods (cleanup deletes") {
		t.Errorf("without delete: %v", e)
	}

	// No answer (a review the API server refuses): an error, no verdict.
	_, err = checkGitlabAccess(t.Context(), clientset.Wrap(fakeAuthorizer(t, user, errors.New("the server is down"))), "ci")
	if err == nil || !strings.Contains(err.Error(), "the server is down") {
		t.Errorf("failing review: %v", err)
	}
}

// A ResourceQuota's refusal names the settings to change: those of the
// containers the API server names, or how to fit in what is left.
func TestGitLabQuotaAdvice(t *testing.T) {
	forbidden := func(msg string) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "tether-gitlab-r1-j5", errors.New(msg))
	}
	for _, tc := range []struct {
		err       error
		want, not []string
	}{
		{forbidden("failed quota: q: must specify limits.memory for: helper; requests.cpu for: helper"),
			[]string{"demands requests and limits", "gitlab-helper-cpu and gitlab-helper-memory"}, []string{"service-cpu", "set cpu and memory"}},
		{forbidden("failed quota: q: must specify limits.memory for: build,helper,tether-init,svc-0-redis"),
			[]string{"cpu and memory (the build container", "gitlab-helper-cpu", "service-cpu and service-memory (the services)"}, nil},
		{forbidden("exceeded quota: q, requested: pods=1, used: pods=5, limited: pods=5"),
			[]string{"has not enough left", "limit = in config.toml"}, nil},
		{forbidden(`User "x" cannot create resource "pods"`), nil, []string{"quota"}},
		{apierrors.NewAlreadyExists(schema.GroupResource{Resource: "pods"}, "p"), nil, []string{"quota"}},
	} {
		got := quotaAdvice(tc.err)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%v: advice %q does not say %q", tc.err, got, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(got, n) {
				t.Errorf("%v: advice %q says %q", tc.err, got, n)
			}
		}
		if tc.want == nil && got != "" {
			t.Errorf("%v: advice %q, want none", tc.err, got)
		}
	}
	if a := apiAdvice(forbidden(`User "x" cannot delete resource "pods"`)); !strings.Contains(a, gitlab.RBACFile) {
		t.Errorf("apiAdvice: %q", a)
	}
	if a := apiAdvice(apierrors.NewNotFound(corev1.Resource("pods"), "p")); a != "" {
		t.Errorf("apiAdvice of NotFound: %q", a)
	}
}

// An image that cannot be pulled is named with the setting it comes from,
// read from the wait's *kube.ImagePullError (from an event or the status).
func TestGitLabPullAdvice(t *testing.T) {
	spec := kube.Spec{Image: "golang:1.26", HelperImage: "ghcr.io/tether-ci/tether-shim:v1", Helper: &kube.Helper{Image: "gitlab-helper:x"}}
	pull := func(container string) error {
		return fmt.Errorf("wait: %w", &kube.ImagePullError{Namespace: "ci", Pod: "p", Container: container, Reason: "ErrImagePull"})
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{pull(kube.InitContainer), "ghcr.io/tether-ci/tether-shim:v1 is helper-image"},
		{pull(kube.HelperContainer), `gitlab-helper:x is gitlab-helper-image (git and gitlab-runner-helper`},
		{pull(kube.BuildContainer), "golang:1.26 is the job's image (image: in .gitlab-ci.yml"},
		{pull("svc-0-redis"), "one of the job's services"},
		{errors.New("pod ci/p stayed unschedulable for 2m0s"), ""},
		// Only the type says which container: text is not read.
		{errors.New("image redis:7 of container svc-0-redis cannot be pulled: ErrImagePull"), ""},
		{&kube.WaitingError{Namespace: "ci", Pod: "p", Container: kube.BuildContainer, Reason: "CreateContainerError"}, ""},
	} {
		got := pullAdvice(tc.err, spec)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%q: advice %q, want %q", tc.err, got, tc.want)
		}
	}
}
