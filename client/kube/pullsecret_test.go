package kube

import "testing"

// A pod with its own pull Secret names it after itself, after the
// settings' pull secrets; its settings hash does not depend on its name,
// so two warm pods of one pool (and the job that claims one) hash alike.
func TestOwnPullSecret(t *testing.T) {
	spec := Spec{Namespace: "ci", Name: "tether-a", Image: "bash:5", Serve: true, ImagePullSecrets: []string{"regcred"}, OwnPullSecret: true}
	objs, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	got := objs.Pod.Spec.ImagePullSecrets
	if len(got) != 2 || got[0].Name != "regcred" || got[1].Name != "tether-a"+PullSecretSuffix {
		t.Errorf("imagePullSecrets %v, want regcred then the pod's own", got)
	}
	other := spec
	other.Name = "tether-b"
	h1, err := PoolHash(spec)
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := PoolHash(other)
	without := spec
	without.OwnPullSecret = false
	h3, _ := PoolHash(without)
	if h1 != h2 || h1 == h3 {
		t.Errorf("hashes %s (tether-a), %s (tether-b), %s (no own Secret): want the names alike, the setting not", h1, h2, h3)
	}
}
