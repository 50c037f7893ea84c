//go:build e2e

package e2e

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/client/kube"
)

// TestKubePullSecretAndServiceAccount: --pull-secret and --service-account
// reach the pod. The job prints its service account token and the test
// reads the token's subject: the pod really ran as that account. The pull
// secret is checked on the pod's spec only: the e2e node has no registry to
// pull from (its images are imported), so no pull uses it.
func TestKubePullSecretAndServiceAccount(t *testing.T) {
	c := NewCluster(t)
	bin := buildTether(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "identity")
	const secretName, accountName = "regcred", "ci-runner"
	auth := base64.StdEncoding.EncodeToString([]byte("ci:not-a-real-password"))
	_, err := c.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secretName},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{
			corev1.DockerConfigJsonKey: []byte(`{"auths":{"registry.example":{"auth":"` + auth + `"}}}`),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create the pull secret: %v", err)
	}
	if _, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: accountName}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the service account: %v", err)
	}

	paths := writeScripts(t, []string{"job.sh"}, map[string]string{"job.sh": "cat /var/run/secrets/kubernetes.io/serviceaccount/token\n"})
	res := runCLI(ctx, t, c, bin, "run", "--image", BusyboxImage, "--helper-image", HelperImage, "-n", ns,
		"--pull-secret", secretName, "--service-account", accountName, "--keep", paths[0])
	t.Logf("stderr:\n%s", res.stderr)
	if res.code != 0 {
		t.Fatalf("exit code %d; want 0", res.code)
	}
	if sub := tokenSubject(t, res.stdout); sub != "system:serviceaccount:"+ns+":"+accountName {
		t.Fatalf("the job's token is for %q; want service account %s/%s", sub, ns, accountName)
	}

	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedByValue})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the pod kept with --keep: %v (%d pods)", err, len(pods.Items))
	}
	pod := pods.Items[0]
	if pod.Spec.ServiceAccountName != accountName {
		t.Errorf("pod service account %q; want %s", pod.Spec.ServiceAccountName, accountName)
	}
	if !slices.Contains(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: secretName}) {
		t.Errorf("pod image pull secrets %v; want %s", pod.Spec.ImagePullSecrets, secretName)
	}
	if err := c.Client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete the kept pod: %v", err)
	}
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}

// tokenSubject returns the "sub" claim of a JWT.
func tokenSubject(t testing.TB, token string) string {
	t.Helper()
	parts := strings.Split(strings.TrimSpace(token), ".")
	if len(parts) != 3 {
		t.Fatalf("the job printed %d bytes that are not a JWT", len(token))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("decode the token's payload: %v", err)
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatalf("parse the token's claims: %v", err)
	}
	return claims.Sub
}
