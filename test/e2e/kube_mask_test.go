//go:build e2e

package e2e

import (
	"context"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
)

// TestKubeMaskedValues: values masked by name (kube.Spec.MaskEnv, read by
// the shim from its environment) and by value (client.Job.Mask, sent over
// the attach stream) never leave the pod: neither the client's output nor
// the pod's log (pods/log, what kubectl logs shows) holds them, whole,
// split across two writes or URL-encoded; the pod spec holds neither the
// masked value sent by value.
func TestKubeMaskedValues(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "mask")
	const byName, byValue = "named-secret-7731", "sent/secret 4242"
	script := `echo "token $TOKEN"
printf 'split named-sec'; sleep 0.1; echo 'ret-7731'
echo "sent ` + byValue + `"
echo "encoded ` + url.QueryEscape(byValue) + `"
`
	spec := kubeSpec(ns, BusyboxImage, script)
	spec.Env = map[string]string{"TOKEN": byName}
	spec.MaskEnv = []string{"TOKEN"}
	pod, objs := startPod(ctx, t, c, spec)
	job := objs.Job
	job.Mask = []string{byValue}
	out := &safeBuffer{}
	res, err := client.Run(ctx, pod.Transport(c.Config, kube.TransportOptions{Logger: kubeLogger(t)}), job,
		client.Options{Output: out, Logger: kubeLogger(t), ExitShim: true})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run: %v, exit %d", err, res.ExitCode)
	}
	want := "token [MASKED]\nsplit [MASKED]\nsent [MASKED]\nencoded [MASKED]\n"
	if string(out.Bytes()) != want {
		t.Fatalf("output %q, want %q", out.Bytes(), want)
	}
	// The pod's status may lag the events WaitRunning follows: pods/log
	// answers "waiting to start" until the kubelet reported the container.
	var logs []byte
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		rc, err := c.Client.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{Container: kube.BuildContainer}).Stream(ctx)
		if err != nil {
			t.Logf("pods/log: %v", err)
			return false, nil
		}
		defer rc.Close()
		logs, err = io.ReadAll(rc)
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("read the pod's log: %v", err)
	}
	for _, v := range []string{byName, byValue, url.QueryEscape(byValue), "named-sec"} {
		if strings.Contains(string(logs), v) {
			t.Errorf("the pod log contains %q:\n%s", v, logs)
		}
	}
	if strings.Count(string(logs), "[MASKED]") < 4 {
		t.Errorf("the pod log lacks [MASKED]:\n%s", logs)
	}
	got, err := c.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if spec := got.Spec.String(); strings.Contains(spec, byValue) {
		t.Errorf("the pod spec holds the value sent over the attach stream")
	}
}
