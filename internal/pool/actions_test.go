package pool

import (
	"strings"
	"testing"

	"github.com/tether-ci/tether/internal/actionspod"
)

// A pool for Actions jobs: its keys reach the hook's shape of its pods
// (the services with their aliases, the externals' copy, the pull
// policy, the pod's own pull Secret); keys of other kinds are refused.
func TestParseActionsPool(t *testing.T) {
	pools, err := Parse("pools.yaml", []byte(`
pools:
- name: act
  for: actions
  image: node:22
  actions-service: [postgres:16, redis:7]
  actions-externals-image: runner:2
  pull-policy: IfNotPresent
  memory: 1Gi
`))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := pools[0].Spec("ci")
	if err != nil {
		t.Fatal(err)
	}
	if spec.Image != "node:22" || len(spec.Services) != 2 || spec.Services[1].Aliases[0] != "redis" || spec.Services[0].Env["GITHUB_ACTIONS"] != "true" ||
		spec.PullPolicy != "IfNotPresent" || !spec.OwnPullSecret || len(spec.ImageCopies) != 1 || spec.ImageCopies[0].Image != "runner:2" ||
		spec.ImageCopies[0].Dir != actionspod.DefaultExternalsDir {
		t.Errorf("spec %+v: want the hook's shape of the pool's keys", spec)
	}
	if _, err := pools[0].WarmPod(spec); err != nil {
		t.Errorf("the warm pod: %v", err)
	}
	none, err := Parse("pools.yaml", []byte("pools:\n- name: a\n  for: actions\n  image: x\n"))
	if err != nil {
		t.Fatal(err)
	}
	if spec, _ := none[0].Spec("ci"); len(spec.ImageCopies) != 0 {
		t.Errorf("externals %+v without actions-externals-image: want none", spec.ImageCopies)
	}
	for _, c := range []struct{ body, want string }{
		{"pools:\n- name: a\n  image: x\n  actions-service: [redis]\n", `key "actions-service" has no meaning in a pool for run jobs`},
		{"pools:\n- name: a\n  image: x\n  pull-policy: Always\n", `key "pull-policy" has no meaning in a pool for run jobs`},
		{"pools:\n- name: a\n  for: gitlab\n  image: x\n  gitlab-helper-image: none\n  actions-externals-image: r\n", `key "actions-externals-image" has no meaning in a pool for gitlab jobs`},
		{"pools:\n- name: a\n  for: actions\n  image: x\n  builds-dir: /b\n", `key "builds-dir" has no meaning in a pool for actions jobs`},
		{"pools:\n- name: a\n  for: actions\n  image: x\n  restricted: true\n", `key "restricted" has no meaning in a pool for actions jobs`},
		{"pools:\n- name: a\n  for: actions\n  image: x\n  actions-externals-dir: rel\n", `actions-externals-dir "rel" must be an absolute path`},
		{"pools:\n- name: a\n  for: actions\n  image: x\n  pull-policy: Sometimes\n", `pull-policy "Sometimes"`},
		{"pools:\n- name: a\n  for: jenkins\n  image: x\n", `--for "jenkins": want run, gitlab or actions`},
	} {
		if _, err := Parse("pools.yaml", []byte(c.body)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.body, err, c.want)
		}
	}
}
