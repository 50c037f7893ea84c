package gitlab

import (
	"strings"
	"testing"

	"github.com/tether-ci/tether/client/kube"
	gitlab "github.com/tether-ci/tether/integration/gitlab/internal/runnerapi"
	"github.com/tether-ci/tether/internal/pool"
)

// A job of the driver hashes as a pool for gitlab jobs with the driver's
// settings does (so it claims the pool's pods) exactly when its image and
// services are the pool's: a job without the pool's services, with
// another image, or a service with variables starts a pod of its own.
func TestGitLabJobHashesAsItsPool(t *testing.T) {
	cfg := gitlabTestFlags(t, "--cpu", "500m", "--pull-policy", "Never", "--helper-image", "example.org/shim:1",
		"--gitlab-helper-image", "example.org/git:1", "--service-cpu", "100m", "--pool", "ci")
	pools, err := pool.Parse("pools.yaml", []byte(`pools:
- name: ci
  for: gitlab
  image: golang:1.26
  helper-image: example.org/shim:1
  gitlab-helper-image: example.org/git:1
  pull-policy: Never
  cpu: 500m
  service: [postgres:16=db]
  service-cpu: 100m
`))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := pools[0].Spec("ci")
	if err != nil {
		t.Fatal(err)
	}
	want, err := kube.PoolHash(ps)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CUSTOM_ENV_CI_JOB_ID": "5"}
	hash := func(job *gitlab.Job) string {
		t.Helper()
		job.Runner.Timeout = 600
		spec, err := gitlabSpec(cfg, job, "tether-gitlab-r1-j5", func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		spec.Namespace = "ci"
		h, err := kube.PoolHash(spec)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	db := gitlab.Service{Name: "postgres:16", Alias: "db"}
	if h := hash(&gitlab.Job{Image: gitlab.Image{Name: "golang:1.26"}, Services: []gitlab.Service{db}}); h != want {
		t.Errorf("a job with the pool's image and services hashes %s, the pool %s", h, want)
	}
	withVars := db
	withVars.Variables = []gitlab.Variable{{Key: "POSTGRES_PASSWORD", Value: "pw"}}
	for what, job := range map[string]*gitlab.Job{
		"no services":          {Image: gitlab.Image{Name: "golang:1.26"}},
		"another image":        {Image: gitlab.Image{Name: "golang:1.25"}, Services: []gitlab.Service{db}},
		"a service alias":      {Image: gitlab.Image{Name: "golang:1.26"}, Services: []gitlab.Service{{Name: "postgres:16", Alias: "pg"}}},
		"a service variable":   {Image: gitlab.Image{Name: "golang:1.26"}, Services: []gitlab.Service{withVars}},
		"one service too many": {Image: gitlab.Image{Name: "golang:1.26"}, Services: []gitlab.Service{db, {Name: "redis:7"}}},
	} {
		if h := hash(job); h == want {
			t.Errorf("a job with %s hashes as the pool (%s): it would claim a pod not shaped for it", what, h)
		}
	}
}

// A pool for gitlab jobs needs the helper image as the driver expands it,
// and takes no key the driver has not; a pool for tether run takes no
// GitLab key.
func TestGitLabPoolKeys(t *testing.T) {
	for yaml, want := range map[string]string{
		"pools:\n- {name: a, for: gitlab, image: x}\n":                                              "no gitlab-helper-image",
		"pools:\n- {name: a, for: gitlab, image: x, gitlab-helper-image: 'h:${V}'}\n":               "as the driver expands it",
		"pools:\n- {name: a, for: gitlab, image: x, gitlab-helper-image: none, restricted: true}\n": `key "restricted" has no meaning in a pool for gitlab jobs`,
		"pools:\n- {name: a, image: x, builds-dir: /b}\n":                                           `key "builds-dir" has no meaning in a pool for run jobs`,
		"pools:\n- {name: a, for: docker, image: x}\n":                                              `--for "docker"`,
	} {
		_, err := pool.Parse("p.yaml", []byte(yaml))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want it to say %q", yaml, err, want)
		}
	}
}
