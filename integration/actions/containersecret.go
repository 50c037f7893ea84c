package actions

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/actions/hookapi"
)

// podSecret is the Secret name of the job's pod (namespace, name, uid),
// owned by the pod so it goes with it, labelled as Tether's for the job.
func podSecret(namespace, pod string, uid types.UID, job, name string, typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace, OwnerReferences: []metav1.OwnerReference{kube.PodOwner(pod, uid)},
			Labels: map[string]string{kube.LabelManagedBy: kube.ManagedByValue, kube.LabelJob: job},
		},
		Type: typ,
		Data: data,
	}
}

// createStepSecret creates the Secret holding a container step's env,
// owned by the job's pod.
func createStepSecret(ctx context.Context, c *cluster, p *corev1.Pod, name string, env map[string][]byte) error {
	sec := podSecret(p.Namespace, p.Name, p.UID, p.Labels[kube.LabelJob], name, corev1.SecretTypeOpaque, env)
	if _, err := c.cs.CoreV1().Secrets(p.Namespace).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the Secret %s/%s for the step's env: %w", p.Namespace, name, err)
	}
	return nil
}

// deleteStepSecret deletes a container step's env Secret, even after ctx
// ended; a failure is a warning (the Secret goes with the pod).
func deleteStepSecret(ctx context.Context, h *Hook, c *cluster, ns, name string) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
	defer cancel()
	err := c.cs.CoreV1().Secrets(ns).Delete(dctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		h.warn("cannot delete the step's env Secret %s/%s (it goes with the job's pod): %v", ns, name, err)
	}
}

// addStepCredentials adds a container step's registry credentials to the
// job pod's pull Secret. A pod's imagePullSecrets are fixed when it is
// created, so prepare_job names one in every pod (empty when the job
// had no credentials); a pod without it (made by an older tether) pulls
// the image without them, with a warning.
func addStepCredentials(ctx context.Context, h *Hook, c *cluster, st *hookapi.State, reg *hookapi.Registry) error {
	p, err := c.cs.CoreV1().Pods(st.Namespace).Get(ctx, st.Pod, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("cannot read the job's pod %s/%s: %w", st.Namespace, st.Pod, err)
	}
	name := st.Pod + pullSecretSuffix
	if !slices.ContainsFunc(p.Spec.ImagePullSecrets, func(r corev1.LocalObjectReference) bool { return r.Name == name }) {
		h.warn("the step's registry credentials cannot be used: the job's pod was created without a pull Secret "+
			"(a pod's imagePullSecrets are fixed when it is created; this pod was made by a tether that named one only when the job had credentials), "+
			"so %s is pulled without them", reg.ServerURL)
		return nil
	}
	secrets := c.cs.CoreV1().Secrets(st.Namespace)
	sec, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("cannot read the job pod's pull Secret %s/%s to add the step's registry credentials: %w", st.Namespace, name, err)
	}
	merged, err := mergeAuths(sec.Data[corev1.DockerConfigJsonKey], reg)
	if err != nil {
		return fmt.Errorf("the job pod's pull Secret %s/%s: %w", st.Namespace, name, err)
	}
	sec.Data[corev1.DockerConfigJsonKey] = merged
	if _, err := secrets.Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("cannot add the step's registry credentials to the pull Secret %s/%s: %w", st.Namespace, name, err)
	}
	return nil
}

// mergeAuths adds reg to a .dockerconfigjson (replacing its server's
// entry).
func mergeAuths(config []byte, reg *hookapi.Registry) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(config, &doc); err != nil {
		return nil, fmt.Errorf("its .dockerconfigjson is not JSON: %w", err)
	}
	auths := map[string]json.RawMessage{}
	if a, ok := doc["auths"]; ok {
		if err := json.Unmarshal(a, &auths); err != nil {
			return nil, fmt.Errorf("its auths: %w", err)
		}
	}
	add, err := dockerConfig(&PrepareJobArgs{Container: &Container{Registry: reg}})
	if err != nil {
		return nil, err
	}
	var extra struct{ Auths map[string]json.RawMessage }
	if err := json.Unmarshal(add, &extra); err != nil {
		return nil, err
	}
	for k, v := range extra.Auths {
		auths[k] = v
	}
	b, err := json.Marshal(auths)
	if err != nil {
		return nil, err
	}
	doc["auths"] = b
	return json.Marshal(doc)
}
