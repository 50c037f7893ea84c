package pool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// A file of two pools: every key of a pool reaches its Pool and its Spec,
// the defaults fill in what the file leaves out.
func TestParseTwoPools(t *testing.T) {
	pools, err := Parse("pools.yaml", []byte(`
pools:
- name: small
  image: alpine:3
  size: 3
  max-idle: 90s
  cpu: 500m
  memory: 256Mi
  node-selector: {disk: ssd}
  toleration: [gpu:NoSchedule]
  service-account: builder
  pull-secret: [regcred]
  restricted: true
- name: big
  image: example.org/big:1
  helper-image: example.org/shim:1
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(pools) != 2 {
		t.Fatalf("%d pools, want 2", len(pools))
	}
	small, big := pools[0], pools[1]
	if small.Name != "small" || small.Size != 3 || small.MaxIdle != 90*time.Second || small.Image != "alpine:3" {
		t.Errorf("small: %+v", small)
	}
	if big.Size != DefaultSize || big.MaxIdle != DefaultMaxIdle || big.HelperImage != "example.org/shim:1" {
		t.Errorf("big: size %d max-idle %s helper %q", big.Size, big.MaxIdle, big.HelperImage)
	}
	spec, err := small.Spec("ci")
	if err != nil {
		t.Fatal(err)
	}
	if spec.Namespace != "ci" || spec.Image != "alpine:3" || spec.ServiceAccountName != "builder" || !spec.Restricted ||
		spec.NodeSelector["disk"] != "ssd" || len(spec.Tolerations) != 1 || spec.Tolerations[0].Effect != corev1.TaintEffectNoSchedule ||
		len(spec.ImagePullSecrets) != 1 || spec.ImagePullSecrets[0] != "regcred" {
		t.Errorf("spec %+v", spec)
	}
	if q := spec.Resources.Requests[corev1.ResourceCPU]; q.Cmp(resource.MustParse("500m")) != 0 {
		t.Errorf("cpu request %s, want 500m", q.String())
	}
	if _, err := Find(pools, "big"); err != nil {
		t.Error(err)
	}
	if _, err := Find(pools, "none"); err == nil || !strings.Contains(err.Error(), `no such pool: "none"`) {
		t.Errorf("Find of a missing pool: %v", err)
	}
}

// Every mistake gives a clear message naming the file, the pool and the
// key, with the words `tether run` uses for the same key.
func TestParseMessages(t *testing.T) {
	patchFile := filepath.Join(t.TempDir(), "patch.yaml")
	if err := os.WriteFile(patchFile, []byte("spec:\n  restartPolicy: Always\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, body, want string }{
		{"not YAML", "pools: [", "pools.yaml: not valid YAML"},
		{"not a map", "- a\n- b\n", `pools.yaml: want a map with the key "pools"`},
		{"empty file", "", `pools.yaml: want a map with the key "pools"`},
		{"unknown top-level key", "pool: []\n", `pools.yaml: unknown key "pool": the file holds one key, "pools"`},
		{"no pools", "pools: []\n", `pools.yaml: key "pools": want a list of at least one pool`},
		{"pools not a list", "pools: {name: a}\n", `pools.yaml: key "pools": want a list of at least one pool`},
		{"pool not a map", "pools: [small]\n", "pools.yaml: pool 1: want a map of keys to values"},
		{"unknown key", "pools:\n- name: a\n  image: x\n  cpus: 2\n", `pools.yaml: pool "a": unknown key "cpus" (did you mean "cpu"?): keys are the long names of tether pool's flags (tether pool --help)`},
		{"config key", "pools:\n- name: a\n  image: x\n  config: other.yaml\n", `pools.yaml: pool "a": unknown key "config"`},
		{"bad quantity", "pools:\n- name: a\n  image: x\n  memory: lots\n", `pools.yaml: pool "a": --memory "lots" is not a quantity (e.g. 500m, 2, 512Mi)`},
		{"bad size", "pools:\n- name: a\n  image: x\n  size: three\n", `pools.yaml: pool "a": key "size": invalid value "three" for --size`},
		{"bad duration", "pools:\n- name: a\n  image: x\n  max-idle: soon\n", `pools.yaml: pool "a": key "max-idle": invalid value "soon" for --max-idle`},
		{"list for one value", "pools:\n- name: a\n  image: [x, y]\n", `pools.yaml: pool "a": key "image" (--image): a list, but the flag takes one value`},
		{"null", "pools:\n- name: a\n  image: x\n  cpu: null\n", `pools.yaml: pool "a": key "cpu" (--cpu): no value (null)`},
		{"no image", "pools:\n- name: a\n  size: 2\n", `pools.yaml: pool "a": no image: every pool needs the image of its build container (key image)`},
		{"no name", "pools:\n- image: x\n", "pools.yaml: pool 1: no name: every pool needs a name (key name)"},
		{"bad name", "pools:\n- name: Big_Pool\n  image: x\n", `pools.yaml: pool "Big_Pool": --name "Big_Pool" is not a DNS label`},
		{"name too long", "pools:\n- name: " + strings.Repeat("a", 41) + "\n  image: x\n", "is longer than 40 characters"},
		{"patch over tether", "pools:\n- name: a\n  image: x\n  pod-patch: " + patchFile + "\n", `pools.yaml: pool "a": kube: the pod settings to hash: kube: pod patch changes spec.restartPolicy`},
		{"negative size", "pools:\n- name: a\n  image: x\n  size: -1\n", `pools.yaml: pool "a": --size -1 must not be negative`},
		{"zero max-idle", "pools:\n- name: a\n  image: x\n  max-idle: 0s\n", `pools.yaml: pool "a": --max-idle 0s must be positive`},
		{"duplicate name", "pools:\n- name: a\n  image: x\n- name: a\n  image: y\n", `pools.yaml: pool "a": the name is taken by pool 1`},
		{"bad node selector", "pools:\n- name: a\n  image: x\n  node-selector: [nokv]\n", `pools.yaml: pool "a": --node-selector "nokv": want KEY=VALUE`},
		{"bad toleration", "pools:\n- name: a\n  image: x\n  toleration: [gpu:Sometimes]\n", `pools.yaml: pool "a": --toleration "gpu:Sometimes": effect "Sometimes"`},
		{"bad volume", "pools:\n- name: a\n  image: x\n  volume: [nfs:/x]\n", `pools.yaml: pool "a": --volume "nfs:/x": want`},
		{"request over limit", "pools:\n- name: a\n  image: x\n  requests: cpu=2\n  limits: cpu=1\n", `pools.yaml: pool "a": the cpu request 2 is more than its limit 1`},
		{"missing pod patch", "pools:\n- name: a\n  image: x\n  pod-patch: /nonexistent/patch.yaml\n", `pools.yaml: pool "a": --pod-patch`},
		{"restricted root", "pools:\n- name: a\n  image: x\n  restricted: true\n  run-as-user: 0\n", `pools.yaml: pool "a": --run-as-user 0 contradicts --restricted`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("pools.yaml", []byte(c.body))
			if err == nil {
				t.Fatalf("accepted:\n%s", c.body)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q\nwant it to contain %q", err, c.want)
			}
		})
	}
}

// Load reads the file from disk and names it; a missing file says so.
func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pools.yaml")
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "read the pools file") {
		t.Errorf("missing file: %v", err)
	}
	if err := os.WriteFile(path, []byte("pools:\n- name: a\n  image: x\n  cpus: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.HasPrefix(err.Error(), path+`: pool "a": unknown key "cpus"`) {
		t.Errorf("error %v does not start with the file's path", err)
	}
}
