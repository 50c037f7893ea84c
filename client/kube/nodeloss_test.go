package kube_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
	"github.com/tether-ci/tether/internal/testing/attachserver"
	"github.com/tether-ci/tether/internal/testing/syncbuf"
)

// TestRunEndsOnNodeLoss: the job's node stops (its kubelet and container
// runtime killed, the shim still running) while the pod still shows what
// the kubelet last posted, Pending and not ready, so the node lifecycle
// controller's mark changes nothing on it. Over WebSocket every reconnect
// is upgraded and then fails on its stream; over SPDY it is refused. The
// job keeps reconnecting while the node is Ready, and fails with the node's
// condition on one line once the node is NotReady, long before its
// reconnect timeout.
func TestRunEndsOnNodeLoss(t *testing.T) {
	for _, tc := range []struct {
		proto kube.Protocol
		lazy  bool // the watch begins only with the first reconnect (GitLab's stages)
	}{{kube.ProtocolWebSocket, false}, {kube.ProtocolSPDY, false}, {kube.ProtocolWebSocket, true}, {kube.ProtocolSPDY, true}} {
		proto := tc.proto
		name := string(proto)
		if tc.lazy {
			name += "-lazy"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, attachserver.Options{Logger: quietLogger(t)})
			pod := "nodeloss-" + name
			e.shim(t, pod)
			job := e.script(t, "job.sh", "echo started\nsleep 600\necho never\n")
			cs := fake.NewClientset(
				&corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns, ResourceVersion: "1"},
					Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: kube.BuildContainer}}},
					Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
						{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"},
					}},
				},
				&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
					{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"},
				}}},
			)
			tr := e.transport(t, "", pod, proto)
			tr.Client = clientset.Wrap(fakeWithAttach{cs, tr.Client.CoreV1().RESTClient()})
			tr.Options.Logger = quietLogger(t)
			tr.Options.LazyDisruptionWatch = tc.lazy
			out := &syncbuf.Buffer{}
			opts := sessionOptions(t, out, &eventLog{})
			opts.ReconnectTimeout = 2 * time.Minute
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			type outcome struct {
				res client.Result
				err error
			}
			ended := make(chan outcome, 1)
			go func() {
				res, err := kube.Run(ctx, tr, client.Job{Scripts: []string{job}}, opts)
				ended <- outcome{res, err}
			}()
			for !strings.Contains(out.String(), "started\n") {
				select {
				case o := <-ended:
					t.Fatalf("the job ended before it started: %v", o.err)
				case <-time.After(20 * time.Millisecond):
				}
			}
			if err := e.srv.SetNodeDown(true); err != nil {
				t.Fatal(err)
			}
			select {
			case o := <-ended:
				t.Fatalf("the job ended while its node was still Ready: %v", o.err)
			case <-time.After(2 * time.Second): // several reconnects
			}
			since := time.Now().Truncate(time.Second)
			node, err := cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			node.Status.Conditions[0] = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
				Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status.", LastTransitionTime: metav1.NewTime(since)}
			if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			marked := time.Now()
			var o outcome
			select {
			case o = <-ended:
			case <-time.After(15 * time.Second):
				t.Fatal("the job did not end within 15s of its node being NotReady")
			}
			t.Logf("the job ended %s after its node was marked NotReady", time.Since(marked).Round(time.Millisecond))
			var d *kube.DisruptedError
			if !errors.As(o.err, &d) || d.Reason != kube.ReasonNodeNotReady {
				t.Fatalf("Run = %v; want a *DisruptedError with reason %s", o.err, kube.ReasonNodeNotReady)
			}
			want := regexp.MustCompile(`^pod ci/` + pod + `: lost its node: node n1 is NotReady since \d\d:\d\d:\d\d: its kubelet stopped posting status$`)
			if !want.MatchString(d.Error()) || !strings.Contains(d.Error(), since.Format(time.TimeOnly)) {
				t.Errorf("error %q; want it to match %s with %s", d.Error(), want, since.Format(time.TimeOnly))
			}
			if !errors.Is(o.err, client.ErrShimGone) {
				t.Errorf("%v does not wrap client.ErrShimGone", o.err)
			}
			if strings.Contains(out.String(), "never") {
				t.Errorf("output %q: the job went on", out.String())
			}
		})
	}
}

// fakeWithAttach is a fake clientset (pods, nodes) whose core REST client,
// which builds the attach URL, is the attach server's.
type fakeWithAttach struct {
	*fake.Clientset
	rest rest.Interface
}

func (c fakeWithAttach) CoreV1() corev1client.CoreV1Interface {
	return coreWithAttach{c.Clientset.CoreV1(), c.rest}
}

type coreWithAttach struct {
	corev1client.CoreV1Interface
	rest rest.Interface
}

func (c coreWithAttach) RESTClient() rest.Interface { return c.rest }
