package gitlab

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
	gitlab "github.com/tether-ci/tether/integration/gitlab/internal/runnerapi"
	"github.com/tether-ci/tether/internal/testing/attachserver"
	"github.com/tether-ci/tether/protocol"
)

// gitlabSpec gives both shims of a GitLab job's pod the gitlab-runner
// alias; tether run's pods have none.
func TestGitLabSpecRunnerCommandAlias(t *testing.T) {
	env := map[string]string{"CUSTOM_ENV_CI_RUNNER_VERSION": "18.1.0", "CUSTOM_ENV_CI_JOB_ID": "5"}
	for _, helper := range []string{"", "none"} {
		args := []string{"--image", "alpine:3"}
		if helper != "" {
			args = append(args, "--gitlab-helper-image", helper)
		}
		spec, err := gitlabSpec(gitlabTestFlags(t, args...), &gitlab.Job{}, "tether-gitlab-r1-j5", func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		spec.Namespace = "ci"
		objs, err := kube.Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		pod := objs.Pod.Spec
		containers := pod.Containers
		if helper == "" {
			containers = append(containers, pod.InitContainers[len(pod.InitContainers)-1])
		}
		for _, c := range containers {
			if !strings.Contains(strings.Join(c.Args, " "), "--command-alias=gitlab-runner=gitlab-runner-helper") {
				t.Errorf("gitlab-helper-image %q: container %s args %v lack the gitlab-runner alias", helper, c.Name, c.Args)
			}
		}
	}
}

func TestRunnerCommandWarning(t *testing.T) {
	missing := protocol.Hello{CommandAliases: []protocol.CommandAlias{{Name: "gitlab-runner", Target: "gitlab-runner-helper"}}}
	linked := protocol.Hello{CommandAliases: []protocol.CommandAlias{{Name: "gitlab-runner", Target: "gitlab-runner-helper", Path: "/usr/bin/gitlab-runner-helper", Linked: true}}}
	own := protocol.Hello{CommandAliases: []protocol.CommandAlias{{Name: "gitlab-runner", Target: "gitlab-runner-helper", Path: "/usr/bin/gitlab-runner"}}}
	unlinkable := protocol.Hello{CommandAliases: []protocol.CommandAlias{{Name: "gitlab-runner", Target: "gitlab-runner-helper", Error: "cannot link: read-only file system"}}}
	const helperImg, buildImg = "registry.example/helper:1", "alpine:3"
	for _, tc := range []struct {
		name, what string
		hello      protocol.Hello
		helper     string
		want       []string // substrings; none: no line
	}{
		{"no caches or artifacts", "", missing, helperImg, nil},
		{"helper has gitlab-runner-helper", "caches", linked, helperImg, nil},
		{"helper has gitlab-runner", "artifacts", own, helperImg, nil},
		{"an older shim says nothing", "caches", protocol.Hello{}, helperImg, nil},
		{"helper has neither", "caches and artifacts", missing, helperImg, []string{
			"WARNING: ", "this job's caches and artifacts will not be saved or restored", "helper container's image " + helperImg,
			"neither gitlab-runner-helper nor gitlab-runner", "set gitlab-helper-image"}},
		{"build container has neither", "artifacts", missing, "", []string{
			"WARNING: ", "this job's artifacts will not be saved", "build container's image " + buildImg, "gitlab-helper-image is none",
			"set gitlab-helper-image"}},
		{"the link cannot be made", "caches", unlinkable, helperImg, []string{"WARNING: ", "read-only file system", "could not be offered as gitlab-runner"}},
	} {
		got := runnerCommandWarning(tc.what, tc.hello, tc.helper, buildImg)
		if len(tc.want) == 0 {
			if got != "" {
				t.Errorf("%s: %q, want no line", tc.name, got)
			}
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tc.name, got, w)
			}
		}
		if strings.Contains(got, "\n") {
			t.Errorf("%s: %q is more than one line", tc.name, got)
		}
	}
}

// checkRunnerCommand reads the hello of the real shim in the helper
// container from its log, and prints the warning once for a job with
// caches whose helper image has neither binary; nothing where the image
// has gitlab-runner-helper, and for a job without caches or artifacts it
// does not even read the log.
func TestCheckRunnerCommand(t *testing.T) {
	srv, err := attachserver.Start(attachserver.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cs, err := kubernetes.NewForConfig(srv.RESTConfig(""))
	if err != nil {
		t.Fatal(err)
	}
	withHelper := t.TempDir()
	if err := os.WriteFile(filepath.Join(withHelper, gitlab.RunnerHelperCommand), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	startHelper := func(pod, path string) {
		cmd := exec.Command(filepath.Join(binDir, "tether-shim"), "--spool-dir="+t.TempDir(), "--command-alias=gitlab-runner=gitlab-runner-helper")
		cmd.Env = append(os.Environ(), "PATH="+path)
		c, err := srv.AddContainer("ci", pod, kube.HelperContainer, cmd)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Kill)
		deadline := time.Now().Add(time.Minute)
		for !bytes.Contains(c.Log(), []byte("h 0 ")) {
			if time.Now().After(deadline) {
				t.Fatalf("no hello in the shim's log within a minute:\n%s", c.Log())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	startHelper("lacks", "/usr/bin:/bin")
	startHelper("has", withHelper+":/usr/bin:/bin")
	caches := &gitlab.Job{Cache: []gitlab.Cache{{Key: "k", Paths: []string{"vendor/"}}}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	check := func(pod string, job *gitlab.Job) string {
		var out bytes.Buffer
		checkRunnerCommand(context.Background(), &kube.Pod{Client: clientset.Wrap(cs), Namespace: "ci", Name: pod}, job, "registry.example/helper:1", "alpine:3", &out, log)
		return out.String()
	}
	got := check("lacks", caches)
	if strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "WARNING: ") || !strings.Contains(got, "registry.example/helper:1") {
		t.Fatalf("helper without gitlab-runner-helper: %q, want one WARNING line naming the image", got)
	}
	if got := check("has", caches); got != "" {
		t.Fatalf("helper with gitlab-runner-helper: %q, want nothing", got)
	}
	before := srv.LogRequests("")
	if got := check("lacks", &gitlab.Job{}); got != "" || srv.LogRequests("") != before {
		t.Fatalf("a job without caches or artifacts: %q, %d log requests; want nothing and none", got, srv.LogRequests("")-before)
	}
}
