package actions

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	ktesting "k8s.io/client-go/testing"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/actions/hookapi"
	"github.com/tether-ci/tether/internal/pool"
	"github.com/tether-ci/tether/protocol"
)

// actionsPool is a pool for Actions jobs of image bash:5 with a redis
// service, the runner's externals and 256Mi, in namespace ci.
const actionsPool = `
pools:
- name: act
  for: actions
  image: bash:5
  actions-service: [redis:7]
  actions-externals-image: runner:2
  memory: 256Mi
`

// poolSpec is the spec of the warm pods of the one pool of file.
func poolSpec(t *testing.T, file string) (*pool.Pool, kube.Spec) {
	t.Helper()
	pools, err := pool.Parse("pools.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := pools[0].Spec("ci")
	if err != nil {
		t.Fatal(err)
	}
	return &pools[0], spec
}

// poolHookEnv is the environment of a hook whose settings match
// actionsPool, with a runner pod and the pool setting.
func poolHookEnv(t *testing.T) map[string]string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(cfg, []byte("memory: 256Mi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]string{EnvConfig: cfg, EnvExternalsImage: "runner:2", EnvPool: "act", EnvRunnerPodName: "runner-1",
		EnvReconnectTimeout: "1s", EnvPrepareTimeout: "5"}
}

// hookSpec is the job's pod spec as PrepareJob makes it before its create
// or claim, and the planned shape.
func hookSpec(t *testing.T, env map[string]string, args *PrepareJobArgs) (kube.Spec, *podShape) {
	t.Helper()
	s := fakeSettings(t, env)
	getenv := func(k string) string { return env[k] }
	shape, err := planShape(args, getenv(EnvHookTemplate), func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := jobSpec(s, args, "ci", getenv(EnvRunnerPodName))
	if err != nil {
		t.Fatal(err)
	}
	if err := addExternals(&spec, getenv, nil); err != nil {
		t.Fatal(err)
	}
	if err := shape.shapeSpec(&spec); err != nil {
		t.Fatal(err)
	}
	return spec, shape
}

func mustHash(t *testing.T, spec kube.Spec) string {
	t.Helper()
	h, err := kube.PoolHash(spec)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A warm pod of a for: actions pool hashes as the pod prepare_job makes
// for a job of the pool's image and services under the same settings,
// whatever the job's variables; a job of another image, other services,
// a service with variables, or other externals does not.
func TestActionsPoolHashesAsTheJobsPod(t *testing.T) {
	p, ps := poolSpec(t, actionsPool)
	objs, err := p.WarmPod(ps)
	if err != nil {
		t.Fatal(err)
	}
	warm := objs.Pod.Labels[kube.LabelPoolHash]
	env := poolHookEnv(t)
	job := func() *PrepareJobArgs {
		return &PrepareJobArgs{
			Container: &Container{Image: "bash:5", EnvironmentVariables: map[string]string{"TOKEN": "s3cret", "HOME": HomeDir}, CreateOptions: "-e OPT=1"},
			Services:  []Container{{Image: "redis:7", PortMappings: []string{"6379:6379"}}},
		}
	}
	spec, shape := hookSpec(t, env, job())
	if got := mustHash(t, spec); got != warm {
		t.Fatalf("the job's pod hashes %s, the pool's warm pod %s: want equal", got, warm)
	}
	if why := shapedBeyondSpec(shape, spec, job().Services); why != "" {
		t.Errorf("a job with only a variable option: %s, want nothing beyond the spec", why)
	}
	for name, change := range map[string]func(a *PrepareJobArgs, env map[string]string){
		"another image": func(a *PrepareJobArgs, _ map[string]string) { a.Container.Image = "bash:4" },
		"no service":    func(a *PrepareJobArgs, _ map[string]string) { a.Services = nil },
		"a service's variables": func(a *PrepareJobArgs, _ map[string]string) {
			a.Services[0].EnvironmentVariables = map[string]string{"A": "1"}
		},
		"a service's entry point": func(a *PrepareJobArgs, _ map[string]string) { a.Services[0].EntryPoint = "/bin/sh" },
		"other externals":         func(_ *PrepareJobArgs, env map[string]string) { env[EnvExternalsImage] = ExternalsOff },
		"a workflow volume": func(a *PrepareJobArgs, _ map[string]string) {
			a.Container.UserMountVolumes = []hookapi.Mount{{TargetVolumePath: "/data"}}
		},
	} {
		a, e := job(), poolHookEnv(t)
		change(a, e)
		spec, _ := hookSpec(t, e, a)
		if got := mustHash(t, spec); got == warm {
			t.Errorf("%s: the job's pod hashes as the warm pod (%s)", name, got)
		}
	}
}

// The workflow's options a kube.Spec does not carry, and a hook template,
// shape the job's pod beyond any warm pod: prepare_job does not claim.
func TestShapedBeyondSpec(t *testing.T) {
	env := poolHookEnv(t)
	for name, args := range map[string]*PrepareJobArgs{
		"cpus":            {Container: &Container{Image: "bash:5", CreateOptions: "--cpus 2"}},
		"user":            {Container: &Container{Image: "bash:5", CreateOptions: "--user 1000"}},
		"service options": {Container: &Container{Image: "bash:5"}, Services: []Container{{Image: "redis:7", CreateOptions: "--cap-add NET_ADMIN"}}},
	} {
		spec, shape := hookSpec(t, env, args)
		if why := shapedBeyondSpec(shape, spec, args.Services); why == "" {
			t.Errorf("%s: nothing beyond the spec, want the options named", name)
		}
	}
	tpl := filepath.Join(t.TempDir(), "tpl.yaml")
	if err := os.WriteFile(tpl, []byte("metadata:\n  labels: {team: a}\nspec:\n  containers: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env[EnvHookTemplate] = tpl
	args := &PrepareJobArgs{Container: &Container{Image: "bash:5"}}
	spec, shape := hookSpec(t, env, args)
	if why := shapedBeyondSpec(shape, spec, nil); !strings.Contains(why, EnvHookTemplate) {
		t.Errorf("a hook template: %q, want it named", why)
	}
}

// runningWarmPod is a warm pod of p as the controller leaves it: created,
// running, its shim answered (idle).
func runningWarmPod(t *testing.T, p *pool.Pool, spec kube.Spec) *corev1.Pod {
	t.Helper()
	objs, err := p.WarmPod(spec)
	if err != nil {
		t.Fatal(err)
	}
	pod := objs.Pod
	pod.UID = types.UID("uid-" + pod.Name)
	pod.CreationTimestamp = metav1.NewTime(time.Now().Add(-time.Minute))
	pod.Labels[kube.LabelWarm] = kube.WarmIdle
	pod.Status.Phase = corev1.PodRunning
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: kube.BuildContainer, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	return pod
}

// warmPoolCluster is a fake cluster in namespace ci with one idle running
// warm pod of actionsPool and the runner's pod runner-1; a pod create
// with dry run is answered as the API server answers it.
func warmPoolCluster(t *testing.T) (*fake.Clientset, *corev1.Pod) {
	t.Helper()
	p, ps := poolSpec(t, actionsPool)
	warm := runningWarmPod(t, p, ps)
	runner := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ci", Name: "runner-1", UID: "uid-runner"}}
	cs := fake.NewClientset(warm, runner)
	servePodDryRuns(cs)
	return cs, warm
}

// prepare_job with TETHER_ACTIONS_POOL claims the warm pod of the job's
// shape (no pod is created): the claim makes the runner's pod its owner
// and labels it with the runner; the pod's own pull Secret is created,
// owned by it, with the job's registry credentials. Here the API server
// refuses that Secret, so the prepare fails and deletes the claimed pod,
// as a created one.
func TestPrepareJobClaimsAWarmPod(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, warm := warmPoolCluster(t)
	cs.PrependReactor("create", "secrets", func(ktesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("secrets"), "pull", nil)
	})
	h, stderr := fakeHook(cs, poolHookEnv(t))
	h.Settings = fakeSettings(t, poolHookEnv(t))
	in := prepareJobInput(t, "bash:5")
	in.Args = []byte(`{"container":{"image":"bash:5","environmentVariables":{"TOKEN":"s3cret"},"registry":{"username":"u","password":"pw","serverUrl":"r.example"}},"services":[{"image":"redis:7"}]}`)
	if code := PrepareJob(ctx, h, in); code == 0 {
		t.Fatal("prepare_job succeeded although its pull Secret was refused")
	}
	if out := h.Stdout.(interface{ String() string }).String(); !strings.Contains(out, "claimed warm pod ci/"+warm.Name+" of pool act") {
		t.Errorf("stdout %q: want the warm pod claimed (stderr %q)", out, stderr)
	}
	var claimed *corev1.Pod
	for _, a := range cs.Actions() {
		switch {
		case a.GetVerb() == "create" && a.GetResource().Resource == "pods":
			t.Errorf("prepare_job created a pod: %v", a.(ktesting.CreateAction).GetObject().(*corev1.Pod).Name)
		case a.GetVerb() == "update" && a.GetResource().Resource == "pods":
			claimed = a.(ktesting.UpdateAction).GetObject().(*corev1.Pod)
		case a.GetVerb() == "create" && a.GetResource().Resource == "secrets":
			sec := a.(ktesting.CreateAction).GetObject().(*corev1.Secret)
			if sec.Name != warm.Name+kube.PullSecretSuffix || len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].UID != warm.UID ||
				!strings.Contains(string(sec.Data[corev1.DockerConfigJsonKey]), "r.example") {
				t.Errorf("Secret %s owned by %v: want the warm pod's own pull Secret with the job's credentials", sec.Name, sec.OwnerReferences)
			}
		}
	}
	if claimed == nil {
		t.Fatal("no claim (an update of the warm pod)")
	}
	if claimed.Labels[kube.LabelWarm] != kube.WarmClaimed || claimed.Labels[LabelRunnerPod] != "runner-1" ||
		len(claimed.OwnerReferences) != 1 || claimed.OwnerReferences[0].Name != "runner-1" {
		t.Errorf("claimed pod labels %v owners %v: want claimed, the runner's label and the runner as owner", claimed.Labels, claimed.OwnerReferences)
	}
	if b, _ := json.Marshal(claimed); strings.Contains(string(b), "s3cret") {
		t.Error("the claimed pod holds the job container's variable")
	}
	if !hasPullSecret(claimed, warm.Name+kube.PullSecretSuffix) {
		t.Errorf("the warm pod's pull secrets %v lack its own", claimed.Spec.ImagePullSecrets)
	}
	if left := podsLeft(t, cs); len(left) != 1 || left[0] != "runner-1" {
		t.Errorf("pods left %v: want the claimed pod deleted after the failed prepare", left)
	}
}

func hasPullSecret(pod *corev1.Pod, name string) bool {
	for _, r := range pod.Spec.ImagePullSecrets {
		if r.Name == name {
			return true
		}
	}
	return false
}

// A job of another image does not take the warm pod: prepare_job creates
// a pod of its own at once, and the warm pod stays idle.
func TestPrepareJobOfAnotherImageDoesNotClaim(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, warm := warmPoolCluster(t)
	h, _ := fakeHook(cs, poolHookEnv(t))
	h.Settings = fakeSettings(t, poolHookEnv(t))
	in := prepareJobInput(t, "bash:4")
	in.Args = []byte(`{"container":{"image":"bash:4"},"services":[{"image":"redis:7"}]}`)
	_ = PrepareJob(ctx, h, in) // the created pod never runs here
	created := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == "update" && a.GetResource().Resource == "pods" {
			t.Errorf("prepare_job updated pod %s: want no claim", a.(ktesting.UpdateAction).GetObject().(*corev1.Pod).Name)
		}
		if c, ok := a.(ktesting.CreateAction); ok && a.GetResource().Resource == "pods" && len(c.(ktesting.CreateActionImpl).CreateOptions.DryRun) == 0 {
			created++
		}
	}
	if created != 1 {
		t.Errorf("%d pods created, want the job's own", created)
	}
	got, err := cs.CoreV1().Pods("ci").Get(ctx, warm.Name, metav1.GetOptions{})
	if err != nil || got.Labels[kube.LabelWarm] != kube.WarmIdle {
		t.Errorf("the warm pod after another image's job: %v, %v; want it idle", got.Labels, err)
	}
}

// A claimed warm pod's container variables reach each script step as an
// env file over the stream, listed among the step's files.
func TestAddContainerEnv(t *testing.T) {
	job := client.Job{ID: "step-1"}
	if err := addContainerEnv(&job, nil); err != nil || job.EnvFile != "" || len(job.Files) != 0 {
		t.Fatalf("no variables: %+v, %v; want the job unchanged", job, err)
	}
	if err := addContainerEnv(&job, map[string]string{"TOKEN": "s3cret", "CI": "true"}); err != nil {
		t.Fatal(err)
	}
	if len(job.Files) != 1 || job.Files[0].Path != job.EnvFile || !strings.HasPrefix(job.EnvFile, kube.FilesDir+"/") {
		t.Fatalf("job %+v: want one env file in the files directory", job)
	}
	env, err := protocol.ParseEnvFile(job.Files[0].Content)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(env, "\n"), "TOKEN=s3cret") {
		t.Errorf("env file %q lacks the variable", env)
	}
}

// TETHER_ACTIONS_POOL names a pool: a DNS label, else a settings error
// naming the variable.
func TestPoolSetting(t *testing.T) {
	s, err := SettingsFromEnv(func(k string) string { return map[string]string{EnvPool: "node-jobs"}[k] })
	if err != nil || s.Pool != "node-jobs" {
		t.Errorf("pool %q, %v", s.Pool, err)
	}
	if _, err := SettingsFromEnv(func(k string) string { return map[string]string{EnvPool: "Node_Jobs"}[k] }); err == nil || !strings.Contains(err.Error(), EnvPool) {
		t.Errorf("a bad pool name: %v, want an error naming %s", err, EnvPool)
	}
}
