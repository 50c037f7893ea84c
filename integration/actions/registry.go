package actions

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/actions/hookapi"
)

// dockerHub is the registry of credentials without a server URL.
const dockerHub = "https://index.docker.io/v1/"

// pullSecretSuffix ends the name of a job pod's pull Secret.
const pullSecretSuffix = "-pull"

// emptyDockerConfig is the pull Secret's content when no container of the
// job has registry credentials (yet).
const emptyDockerConfig = `{"auths":{}}`

// dockerConfig is the .dockerconfigjson of the registry credentials the
// job's containers carry; nil when none does.
func dockerConfig(args *PrepareJobArgs) ([]byte, error) {
	auths := map[string]map[string]string{}
	add := func(r *hookapi.Registry) {
		if r == nil || (r.Username == "" && r.Password == "") {
			return
		}
		server := r.ServerURL
		if server == "" {
			server = dockerHub
		}
		auths[server] = map[string]string{"username": r.Username, "password": r.Password,
			"auth": base64.StdEncoding.EncodeToString([]byte(r.Username + ":" + r.Password))}
	}
	if args.Container != nil {
		add(args.Container.Registry)
	}
	for i := range args.Services {
		add(args.Services[i].Registry)
	}
	if len(auths) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(map[string]any{"auths": auths})
	if err != nil {
		return nil, fmt.Errorf("encode the registry credentials: %w", err)
	}
	return b, nil
}

// createPullSecret creates the pod's pull Secret (named in its
// imagePullSecrets), owned by the pod: it goes with the pod. The kubelet
// pulls the job's images after the pod's init container (the shim's copy)
// ran, by which time the Secret exists; an earlier pull is retried.
func createPullSecret(ctx context.Context, c *cluster, pod *kube.Pod, job string, config []byte) error {
	sec := podSecret(pod.Namespace, pod.Name, pod.UID(), job, pod.Name+pullSecretSuffix, corev1.SecretTypeDockerConfigJson,
		map[string][]byte{corev1.DockerConfigJsonKey: config})
	if _, err := c.cs.CoreV1().Secrets(pod.Namespace).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the pull Secret %s/%s for the job's registry credentials: %w", sec.Namespace, sec.Name, err)
	}
	return nil
}
