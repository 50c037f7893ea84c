//go:build e2e

package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestGitLabDriverQuotaAdvice: in a namespace whose ResourceQuota demands
// limits, prepare fails as a system failure that names the driver settings
// for the containers the API server lists; with them set but more than
// the quota has, it says the quota has not enough left. No pod is created.
func TestGitLabDriverQuotaAdvice(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-quota")
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "ci"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			corev1.ResourceLimitsMemory: resource.MustParse("512Mi"),
			corev1.ResourceRequestsCPU:  resource.MustParse("1"),
		}},
	}
	if _, err := c.Client.CoreV1().ResourceQuotas(ns).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The quota admission needs the quota's status before it enforces it.
	c.WaitFor(ctx, t, "quota status", func(ctx context.Context) (bool, error) {
		q, err := c.Client.CoreV1().ResourceQuotas(ns).Get(ctx, "ci", metav1.GetOptions{})
		return err == nil && len(q.Status.Hard) > 0, err
	})
	for _, tc := range []struct {
		config string
		want   []string
	}{
		{"cpu: 100m\nmemory: 64Mi\n", []string{"failed quota", "must specify", "set gitlab-helper-cpu and gitlab-helper-memory (the helper container)"}},
		{"cpu: 100m\nmemory: 1Gi\ngitlab-helper-cpu: 10m\ngitlab-helper-memory: 16Mi\n", []string{"exceeded quota", "has not enough left for this pod"}},
	} {
		r := newRunnerStandInJob(t, c, ns, standInJob{Config: tc.config})
		t.Cleanup(func() { r.cleanup(context.Background()) })
		out, err := r.command(ctx, "prepare").CombinedOutput()
		code := -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		for _, w := range tc.want {
			if code != standInSystemFailure || !strings.Contains(string(out), w) {
				t.Errorf("config %q: exit %d (%v), output lacks %q:\n%s", tc.config, code, err, w, out)
			}
		}
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) != 0 {
			t.Errorf("pods after a refused prepare: %v %d", err, len(pods.Items))
		}
	}
}
