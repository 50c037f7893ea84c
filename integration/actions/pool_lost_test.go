package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	ktesting "k8s.io/client-go/testing"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi"
	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
	"github.com/tether-ci/tether/internal/contract"
)

// deletingAttachServer stands in for the API server's attach endpoint of
// a pod deleted under its claimer: each attach request first deletes the
// pod from cs (as a pod deleted between its claim and the attach), then
// is answered as the API server answers an attach to a pod that no longer
// exists (404 NotFound). attaches counts the requests.
func deletingAttachServer(t *testing.T, cs *fake.Clientset, attaches *atomic.Int32) *rest.Config {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		if len(f) != 7 || f[6] != "attach" {
			http.NotFound(w, r)
			return
		}
		attaches.Add(1)
		err := cs.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), f[3], f[5])
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete pod %s/%s: %v", f[3], f[5], err)
		}
		st := apierrors.NewNotFound(corev1.Resource("pods"), f[5]).Status()
		st.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(&st)
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

// attachURLs is cs with the attach URLs of the server of cfg: the
// fake's CoreV1().RESTClient(), with which a Transport makes them, is
// nil.
func attachURLs(t *testing.T, cs *fake.Clientset, cfg *rest.Config) kubeapi.Interface {
	t.Helper()
	real, err := kubeapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return fakeWithREST{clientset.Wrap(cs), real.CoreV1().RESTClient()}
}

type fakeWithREST struct {
	kubeapi.Interface
	rc rest.Interface
}

func (c fakeWithREST) CoreV1() kubeapi.CoreV1Interface {
	return coreWithREST{c.Interface.CoreV1(), c.rc}
}

type coreWithREST struct {
	kubeapi.CoreV1Interface
	rc rest.Interface
}

func (c coreWithREST) RESTClient() rest.Interface { return c.rc }

// refuseColdPods answers every pod create that is not a dry run with a
// quota refusal, so that a prepare_job that starts the job's pod of its
// own ends at once with the create's error.
func refuseColdPods(cs *fake.Clientset, creates *atomic.Int32) {
	cs.PrependReactor("create", "pods", func(a ktesting.Action) (bool, runtime.Object, error) {
		c := a.(ktesting.CreateActionImpl)
		if len(c.CreateOptions.DryRun) > 0 {
			return false, nil, nil
		}
		creates.Add(1)
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), c.GetObject().(*corev1.Pod).Name, errors.New(quotaRefusal))
	})
}

// quotaRefusal is the reason of refuseColdPods' refusal.
const quotaRefusal = "exceeded quota: pods, requested: pods=1, used: pods=1, limited: pods=1"

// A claimed warm pod that is gone before prepare_job's probe reached its
// shim (deleted at its claim, before the wait; or after the wait, before
// the attach) never saw the job: prepare_job says so, deletes the claimed
// pod and its pull Secret, and starts the job's pod of its own at once —
// here the API server refuses that pod, so the prepare fails with the
// cold create's error, not the lost pod's, and without waiting out the
// reconnect timeout (five minutes here).
func TestPrepareJobFallsBackColdWhenTheClaimedPodIsLost(t *testing.T) {
	for _, when := range []string{"at the claim", "before the attach"} {
		t.Run(strings.ReplaceAll(when, " ", "-"), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cs, warm := warmPoolCluster(t)
			var creates, attaches atomic.Int32
			refuseColdPods(cs, &creates)
			if when == "at the claim" {
				cs.PrependReactor("update", "pods", func(a ktesting.Action) (bool, runtime.Object, error) {
					up := a.(ktesting.UpdateAction).GetObject().(*corev1.Pod)
					if err := cs.Tracker().Update(a.GetResource(), up, "ci"); err != nil {
						return true, nil, err
					}
					return true, up, cs.Tracker().Delete(a.GetResource(), "ci", up.Name)
				})
			}
			cfg := deletingAttachServer(t, cs, &attaches)
			env := poolHookEnv(t)
			env[EnvReconnectTimeout] = "5m"
			h, stderr := fakeHook(cs, env)
			h.Connect = func(kube.ConfigOptions) (*rest.Config, string, kubeapi.Interface, error) {
				return cfg, "ci", attachURLs(t, cs, cfg), nil
			}
			h.Settings = fakeSettings(t, env)
			in := prepareJobInput(t, "bash:5")
			in.Args = []byte(`{"container":{"image":"bash:5"},"services":[{"image":"redis:7"}]}`)
			if code := PrepareJob(ctx, h, in); code == 0 {
				t.Fatal("prepare_job succeeded although its cold pod was refused")
			}
			if ctx.Err() != nil {
				t.Fatal("prepare_job hung on a claimed pod that was gone")
			}
			out := h.Stdout.(interface{ String() string }).String()
			if !strings.Contains(out, "claimed warm pod ci/"+warm.Name) || !strings.Contains(out, "was gone before the job reached it") {
				t.Errorf("stdout %q: want the claim and the lost pod said", out)
			}
			if !strings.Contains(stderr.String(), "cannot create the job's pod") || !strings.Contains(stderr.String(), quotaRefusal) {
				t.Errorf("stderr %q: want the cold create's refusal", stderr)
			}
			if creates.Load() != 1 {
				t.Errorf("%d cold pod creates, want 1", creates.Load())
			}
			if when == "at the claim" && attaches.Load() != 0 {
				t.Errorf("%d attaches to a pod deleted at its claim, want none (the wait sees it gone)", attaches.Load())
			}
			if when == "before the attach" && attaches.Load() < 1 {
				t.Error("no attach to the claimed pod")
			}
			if left := podsLeft(t, cs); len(left) != 1 || left[0] != "runner-1" {
				t.Errorf("pods left %v: want only the runner's", left)
			}
			secrets, err := cs.CoreV1().Secrets("ci").List(ctx, metav1.ListOptions{})
			if err != nil || len(secrets.Items) != 0 {
				t.Errorf("Secrets left %v (%v): want the claimed pod's pull Secret deleted", secrets.Items, err)
			}
		})
	}
}

// A job whose workflow options or hook template shape its pod beyond any
// pool's does not ask the pool (no claim), and its miss is recorded as
// the claim's misses are: a WarmPodMiss Event of the pool with reason
// options, which `tether pool status` and the controller count.
func TestPrepareJobBeyondThePoolRecordsAMiss(t *testing.T) {
	tpl := filepath.Join(t.TempDir(), "tpl.yaml")
	if err := os.WriteFile(tpl, []byte("metadata:\n  labels: {team: a}\nspec:\n  containers: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		options string
		env     map[string]string
	}{
		"options":       {options: "--cpus 2"},
		"hook template": {env: map[string]string{EnvHookTemplate: tpl}},
	} {
		t.Run(strings.ReplaceAll(name, " ", "-"), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, _ := warmPoolCluster(t)
			var creates atomic.Int32
			refuseColdPods(cs, &creates)
			env := poolHookEnv(t)
			maps.Copy(env, c.env)
			h, _ := fakeHook(cs, env)
			h.Settings = fakeSettings(t, env)
			in := prepareJobInput(t, "bash:5")
			in.Args = fmt.Appendf(nil, `{"container":{"image":"bash:5","createOptions":%q},"services":[{"image":"redis:7"}]}`, c.options)
			_ = PrepareJob(ctx, h, in) // the cold pod is refused
			if creates.Load() != 1 {
				t.Errorf("%d cold pod creates, want 1", creates.Load())
			}
			for _, a := range cs.Actions() {
				if a.GetVerb() == "update" || a.GetVerb() == "list" && a.GetResource().Resource == "pods" {
					t.Errorf("prepare_job asked the pool (%s %s)", a.GetVerb(), a.GetResource().Resource)
				}
			}
			evs, err := cs.CoreV1().Events("ci").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(evs.Items) != 1 {
				t.Fatalf("%d Events, want one miss", len(evs.Items))
			}
			e := evs.Items[0]
			if e.Reason != contract.EventWarmMiss || e.Annotations[contract.LabelPool] != "act" || e.Annotations[contract.AnnotationMissReason] != string(MissOptions) {
				t.Errorf("Event reason %s, annotations %v: want %s of pool act, reason %s", e.Reason, e.Annotations, contract.EventWarmMiss, MissOptions)
			}
		})
	}
}
