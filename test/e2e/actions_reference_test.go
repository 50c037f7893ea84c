//go:build e2e

package e2e

// The test cases of the reference container hook
// (actions/runner-container-hooks, packages/k8s/tests and
// packages/docker/tests) that check the contract with the runner, run
// against `tether actions` driven as the runner drives it: the launcher
// started with `bash -e`, one JSON line on stdin shaped like the
// reference's examples/*.json with this machine's runner paths. Cases
// that check the reference hook's own functions are not here; the table
// in docs/actions.md ("The reference hook's tests") says where each case
// went.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/integration/actions"
	"github.com/tether-ci/tether/integration/actions/hookapi"
	"github.com/tether-ci/tether/internal/testing/actionsrunner"
)

// examplePrepareArgs is the reference's examples/prepare-job.json args
// with this runner's paths: the job container (its env with the HOME the
// runner adds), the runner's system mounts, create options, registry
// credentials and a port mapping, and the given services.
func examplePrepareArgs(r *actionsrunner.Runner, image string, env map[string]string, services []map[string]any) map[string]any {
	job := actionsrunner.Container(image, env, []string{"80:8080"})
	job["environmentVariables"].(map[string]string)["HOME"] = "/github/home"
	job["workingDirectory"] = r.Workspace()
	job["createOptions"] = "--cpus 1"
	job["registry"] = map[string]any{"username": "foo", "password": "bar", "serverUrl": "https://index.docker.io/v1"}
	job["systemMountVolumes"] = r.JobMounts()
	if services == nil {
		services = []map[string]any{}
	}
	return map[string]any{"container": job, "services": services}
}

// pauseService is a service without entrypoint or command (the image's
// own keeps running), as examples/prepare-job.json's redis service.
func pauseService(ports any) map[string]any {
	s := actionsrunner.Container(PauseImage, nil, nil)
	s["portMappings"] = ports
	s["createOptions"] = "--cpus 1"
	return s
}

// referencePrepare runs prepare_job with args and fails the test unless
// it succeeds with a response; it returns the response.
func referencePrepare(ctx context.Context, t *testing.T, r *actionsrunner.Runner, args map[string]any) hookapi.PrepareResponse {
	t.Helper()
	res, err := r.Invoke(ctx, hookapi.CommandPrepareJob, args)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("prepare_job: %v, exit %d\nstdout %s\nstderr %s", err, res.ExitCode, res.Stdout, res.Stderr)
	}
	var resp hookapi.PrepareResponse
	if err := json.Unmarshal([]byte(res.Response), &resp); err != nil {
		t.Fatalf("prepare_job's response is not JSON: %v\n%s", err, res.Response)
	}
	if resp.State == nil {
		t.Fatalf("prepare_job's response has no state: %s", res.Response)
	}
	return resp
}

// scriptArgs are run_script_step's args, every key present as the runner
// sends them (examples/run-script-step.json's shape).
func scriptArgs(r *actionsrunner.Runner, env map[string]string, prependPath any, entryPoint string, entryPointArgs ...string) map[string]any {
	if env == nil {
		env = map[string]string{}
	}
	if entryPointArgs == nil {
		entryPointArgs = []string{}
	}
	return map[string]any{
		"entryPoint": entryPoint, "entryPointArgs": entryPointArgs, "environmentVariables": env,
		"prependPath": prependPath, "workingDirectory": r.Workspace(),
	}
}

// invokeStep runs run_script_step with args and fails the test on a
// stand-in error.
func invokeStep(ctx context.Context, t *testing.T, r *actionsrunner.Runner, args map[string]any) actionsrunner.Result {
	t.Helper()
	res, err := r.Invoke(ctx, hookapi.CommandRunScriptStep, args)
	if err != nil {
		t.Fatalf("run_script_step %v: %v\nstdout %q\nstderr %s", args, err, res.Stdout, res.Stderr)
	}
	return res
}

// TestActionsReferencePrepareJob runs the reference's prepare_job cases
// that check the contract, on one job built from examples/prepare-job.json
// (job container with registry credentials, create options and a port
// mapping; three services of one image without entrypoint or command,
// whose portMappings are absent, null and empty):
//
//   - k8s/tests/prepare-job-test.ts "should not throw exception" and
//     docker/tests/prepare-job-test.ts "should not throw": exit 0;
//   - k8s "should generate output file in JSON format", docker "should
//     have JSON output written to a file" and "should have context written
//     to a file": the response file holds a JSON object with a context;
//   - k8s "should put only job and services in output context file":
//     context.container, one context.services entry per service (in
//     order), a state;
//   - k8s "should not throw exception when portMapping=%p" (undefined,
//     null, []): each service gets a non-null ports object, as the runner
//     iterates it;
//   - k8s "should create unique service container names when images
//     collide": the pod runs three services of the same image;
//   - k8s "should not set command + args for service container if not
//     passed in args": the services' containers have neither, the image's
//     own entrypoint runs;
//   - docker "should have ports for context written in form
//     [containerPort]:[hostPort]": Tether differs on purpose: every
//     container of the pod shares its network, so a step reaches a
//     service at the container port and each ports entry maps the
//     container port to itself (docs/actions.md, "How it differs");
//   - k8s "should prepare job with envs CI and GITHUB_ACTIONS" and "should
//     not override CI env var if already set": the job container's own
//     environment (read by a step whose env sets neither) has
//     GITHUB_ACTIONS=true and the job's CI=false; each service's has
//     CI=true and GITHUB_ACTIONS=true;
//   - k8s and docker "should determine alpine correctly" / "should have
//     isAlpine field set correctly": isAlpine is false for the (Debian)
//     bash image; the true half needs an Alpine image, which the node does
//     not hold.
func TestActionsReferencePrepareJob(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "actions-ref-prep")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	r := newActionsRunner(t, c, ns)
	absent := pauseService(nil)
	delete(absent, "portMappings")
	services := []map[string]any{absent, pauseService(nil), pauseService([]string{})}
	resp := referencePrepare(ctx, t, r, examplePrepareArgs(r, BashImage, map[string]string{"NODE_ENV": "development", "CI": "false"}, services))

	if resp.Context.Container == nil || resp.Context.Container.Ports["8080"] != "8080" {
		t.Errorf("context.container %+v: want the job container, its port 8080 reachable at 8080", resp.Context.Container)
	}
	if len(resp.Context.Services) != len(services) {
		t.Fatalf("context.services %+v: want one entry per service", resp.Context.Services)
	}
	for i, s := range resp.Context.Services {
		if s.Ports == nil || len(s.Ports) != 0 {
			t.Errorf("service %d: ports %v, want an empty object (no port mappings)", i, s.Ports)
		}
	}
	if resp.IsAlpine {
		t.Errorf("isAlpine true for %s", BashImage)
	}

	pod, err := c.Client.CoreV1().Pods(ns).Get(ctx, resp.State.Pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	var pauses int
	for _, ctr := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		names[ctr.Name] = true
		if ctr.Image != PauseImage {
			continue
		}
		pauses++
		if len(ctr.Command) != 0 || len(ctr.Args) != 0 {
			t.Errorf("service container %s: command %q, args %q, want neither (the image's own)", ctr.Name, ctr.Command, ctr.Args)
		}
		env := map[string]string{}
		for _, e := range ctr.Env {
			env[e.Name] = e.Value
		}
		if env["CI"] != "true" || env["GITHUB_ACTIONS"] != "true" {
			t.Errorf("service container %s: env %v, want CI=true and GITHUB_ACTIONS=true", ctr.Name, env)
		}
	}
	if pauses != len(services) || len(names) != len(pod.Spec.InitContainers)+len(pod.Spec.Containers) {
		t.Errorf("%d service containers (want %d), names %v (want all different)", pauses, len(services), names)
	}

	// The job container's own environment: a step whose env sets neither
	// CI nor GITHUB_ACTIONS.
	res := invokeStep(ctx, t, r, scriptArgs(r, nil, []string{}, "bash", "-c", `'printf "%s|%s|%s" "$CI" "$GITHUB_ACTIONS" "$NODE_ENV"'`))
	if res.ExitCode != 0 || string(res.Stdout) != "false|true|development" {
		t.Errorf("the job container's env: exit %d, stdout %q (want CI, GITHUB_ACTIONS, NODE_ENV = false|true|development), stderr %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	cleanupLeavesNothing(ctx, t, c, ns, r)
}

// TestActionsReferenceRunScriptStep runs the reference's run_script_step
// cases on one job (k8s/tests/run-script-step-test.ts and
// docker/tests/run-script-step-test.ts), each as the subtest named after
// it. Where the reference only checks that the step did not throw,
// Tether's output and exit code are checked too; the reference's "Dollar
// symbols" case passes three commands to `bash -c`, of which bash runs the
// first only, so here all three variables are compared with their values.
func TestActionsReferenceRunScriptStep(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "actions-ref-step")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	r := newActionsRunner(t, c, ns)
	referencePrepare(ctx, t, r, examplePrepareArgs(r, BashImage, map[string]string{"NODE_ENV": "development"}, nil))
	env := map[string]string{"NODE_ENV": "development"}

	for _, tc := range []struct {
		name string
		// args builds the step's args; script, if set, is written into the
		// runner's _temp first, as the runner writes a run: step's script.
		args     func(script string) map[string]any
		script   string
		wantCode int
		wantOut  string
	}{{
		// k8s "should not throw an exception"; docker "Should run script
		// step without exceptions": examples/run-script-step.json.
		name:   "examples/run-script-step.json",
		script: "#!/bin/bash\n\necho \"Hello World\"\n",
		args: func(script string) map[string]any {
			return scriptArgs(r, env, []string{"/foo/bar", "bar/foo"}, "bash", "-e", script)
		},
		wantOut: "Hello World\n",
	}, {
		// k8s "should fail if the working directory does not exist".
		name: "working directory does not exist",
		args: func(string) map[string]any {
			a := scriptArgs(r, env, []string{}, "bash", "-c", "'echo ran'")
			a["workingDirectory"] = "/foo/bar"
			return a
		},
		wantCode: -1,
	}, {
		// k8s "should shold have env variables available".
		name: "env variables available",
		args: func(string) map[string]any {
			return scriptArgs(r, env, []string{}, "bash", "-c", "'printf %s $NODE_ENV'")
		},
		wantOut: "development",
	}, {
		// docker "Should have path variable changed in container with
		// prepend path string": the string form of runners up to 2.293.
		name: "prepend path string",
		args: func(string) map[string]any {
			return scriptArgs(r, env, "/some/path", "/bin/bash", "-c", `'printf %s "$PATH"'`)
		},
		wantOut: "/some/path:",
	}, {
		// k8s and docker "Should have path variable changed in container
		// with prepend path string array" (and k8s "… prepend path
		// string", which sends an array too), most recent first.
		name: "prepend path string array",
		args: func(string) map[string]any {
			return scriptArgs(r, env, []string{"/some/other/path", "/older/path"}, "/bin/bash", "-c", `'printf %s "$PATH"'`)
		},
		wantOut: "/some/other/path:/older/path:",
	}, {
		// k8s "Dollar symbols in environment variables should not be
		// expanded".
		name: "dollar symbols not expanded",
		args: func(string) map[string]any {
			return scriptArgs(r, map[string]string{"VARIABLE1": "$VAR", "VARIABLE2": "${VAR}", "VARIABLE3": "$(VAR)", "VAR": "expanded"},
				[]string{}, "bash", "-c", `'printf "%s|%s|%s" "$VARIABLE1" "$VARIABLE2" "$VARIABLE3"'`)
		},
		wantOut: "$VAR|${VAR}|$(VAR)",
	}, {
		// docker "Should fix expansion and print correctly in container's
		// stdout": the runner's space-split argument string re-joined.
		name:    "quoted arguments re-joined",
		args:    func(string) map[string]any { return scriptArgs(r, env, []string{}, "echo", `"Mona`, "the", `Octocat"`) },
		wantOut: "Mona the Octocat\n",
	}, {
		// docker "Should confirm that CI and GITHUB_ACTIONS are set".
		name: "CI and GITHUB_ACTIONS set",
		args: func(string) map[string]any {
			return scriptArgs(r, env, []string{}, "/bin/bash", "-c", `'env | grep -E "^(CI|GITHUB_ACTIONS)=" | sort'`)
		},
		wantOut: "CI=true\nGITHUB_ACTIONS=true\n",
	}, {
		// Tether differs on purpose: the step's own exit code, where the
		// reference hooks exit 1 for any failure (docs/actions.md).
		name:     "exit code",
		args:     func(string) map[string]any { return scriptArgs(r, env, []string{}, "bash", "-c", "'exit 42'") },
		wantCode: 42,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			script := ""
			if tc.script != "" {
				name := "ref-" + strings.ReplaceAll(tc.name, "/", "-") + ".sh"
				if err := os.WriteFile(filepath.Join(r.Temp, name), []byte(tc.script), 0o755); err != nil {
					t.Fatal(err)
				}
				script = "/__w/_temp/" + name
			}
			res := invokeStep(ctx, t, r, tc.args(script))
			switch {
			case tc.wantCode == -1 && res.ExitCode == 0:
				t.Errorf("exit 0, want a failure; stdout %q, stderr %s", res.Stdout, res.Stderr)
			case tc.wantCode != -1 && res.ExitCode != tc.wantCode:
				t.Errorf("exit %d, want %d; stdout %q, stderr %s", res.ExitCode, tc.wantCode, res.Stdout, res.Stderr)
			case tc.wantCode == 0 && !strings.HasPrefix(string(res.Stdout), tc.wantOut):
				t.Errorf("stdout %q, want it to start with %q; stderr %s", res.Stdout, tc.wantOut, res.Stderr)
			case tc.wantCode == 0 && !strings.HasSuffix(tc.wantOut, ":") && string(res.Stdout) != tc.wantOut:
				t.Errorf("stdout %q, want %q; stderr %s", res.Stdout, tc.wantOut, res.Stderr)
			}
			if tc.wantCode == -1 && strings.Contains(string(res.Stdout), "ran") {
				t.Errorf("the step ran elsewhere: stdout %q", res.Stdout)
			}
		})
	}
	// k8s/tests/k8s-utils-test.ts "should escape double quote, dollar and
	// backslash in environment variable values" (values arrive verbatim)
	// and "should throw if environment variable name contains double
	// quote" (also =, single quote, dollar): Tether differs on purpose,
	// such a name cannot be a shell variable, so it is left out with a
	// warning in the step's log and the step runs with the others.
	t.Run("variable values verbatim, bad names left out", func(t *testing.T) {
		value := `a"b$c\d'e` + "`x`"
		res := invokeStep(ctx, t, r, scriptArgs(r, map[string]string{
			"VALUE": value, `BAD"NAME`: "1", "BAD=NAME": "2", "BAD'NAME": "3", "BAD$NAME": "4",
		}, []string{}, "bash", "-c", `'printf %s "$VALUE"'`))
		if res.ExitCode != 0 || string(res.Stdout) != value {
			t.Errorf("exit %d, stdout %q, want %q; stderr %s", res.ExitCode, res.Stdout, value, res.Stderr)
		}
		for _, name := range []string{`BAD"NAME`, "BAD=NAME", "BAD'NAME", "BAD$NAME"} {
			if !strings.Contains(string(res.Stderr), strconv.Quote(name)) {
				t.Errorf("no warning naming %s: stderr %s", name, res.Stderr)
			}
		}
	})
	// What the runner's log shows of a step (the stand-in's StepLog: line
	// by line, workflow commands interpreted, masks applied): the step's
	// lines only, nothing of the hook's own, the secret masked.
	t.Run("step log", func(t *testing.T) {
		res := mustStep(ctx, t, r, actionsrunner.Step{Script: `echo "::add-mask::tok3n-value"
echo "the tok3n-value here"
echo "::warning::careful"
printf 'caf\303\251 \377\r\nlast'`})
		want := []string{"the *** here", "##[warning]careful", "café \ufffd", "last"}
		if res.ExitCode != 0 || !slices.Equal(res.Log, want) {
			t.Errorf("exit %d, log %q, want %q; stderr %s", res.ExitCode, res.Log, want, res.Stderr)
		}
	})
	cleanupLeavesNothing(ctx, t, c, ns, r)
}

// TestActionsReferenceCleanupJob runs the reference's cleanup_job cases
// (k8s/tests/cleanup-job-test.ts "should not throw", "should have no
// runner linked pods running", "should have no runner linked secrets";
// docker/tests/cleanup-job-test.ts "should cleanup successfully") after a
// prepare_job from examples/prepare-job.json (whose registry credentials
// make a pull Secret) with the runner's pod named: afterwards no pod
// labelled with the runner's pod and no Secret is left in the namespace,
// and a second cleanup_job succeeds too. The reference's
// k8s/tests/e2e-test.ts (prepare, script step, container step, cleanup)
// without its container step is this test with TestActionsReferenceRunScriptStep.
func TestActionsReferenceCleanupJob(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "actions-ref-clean")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	c.CreatePod(ctx, t, SimplePod(ns, "runner-0", BusyboxImage, "sleep", "3600"))
	r := newActionsRunner(t, c, ns, actions.EnvRunnerPodName+"=runner-0")
	referencePrepare(ctx, t, r, examplePrepareArgs(r, BashImage, nil, nil))
	sel := metav1.ListOptions{LabelSelector: actions.LabelRunnerPod + "=runner-0"}
	if pods, err := c.Client.CoreV1().Pods(ns).List(ctx, sel); err != nil || len(pods.Items) != 1 {
		t.Fatalf("runner-linked pods before cleanup_job: %v (err %v), want the job's pod", pods, err)
	}
	if secrets, err := c.Client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); err != nil || len(secrets.Items) == 0 {
		t.Fatalf("Secrets before cleanup_job: %v (err %v), want the pull Secret", secrets, err)
	}
	cleanupLeavesNothing(ctx, t, c, ns, r)
	c.WaitFor(ctx, t, "no runner-linked pod and no Secret", func(ctx context.Context) (bool, error) {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, sel)
		if err != nil {
			return false, err
		}
		secrets, err := c.Client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return len(pods.Items) == 0 && len(secrets.Items) == 0, nil
	})
	if res, err := r.CleanupJob(ctx); err != nil || res.ExitCode != 0 {
		t.Errorf("a second cleanup_job: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
	}
}

// TestActionsReferenceNonRootJobContainer is k8s/tests/prepare-job-test.ts
// "should prepare job with container with non-root user": the job
// container runs as user 1001 (the reference uses an image whose USER is
// 1001; the node holds no such image, so the pod's securityContext sets
// it through TETHER_ACTIONS_CONFIG's pod-patch). prepare_job succeeds and
// a step can write the workspace, HOME and the file-command files.
func TestActionsReferenceNonRootJobContainer(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "actions-ref-user")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	dir := t.TempDir()
	patch, config := filepath.Join(dir, "patch.yaml"), filepath.Join(dir, "pod.yaml")
	if err := os.WriteFile(patch, []byte("spec:\n  securityContext:\n    runAsUser: 1001\n    runAsGroup: 1001\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, []byte("pod-patch: "+patch+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := newActionsRunner(t, c, ns, actions.EnvConfig+"="+config)
	resp := referencePrepare(ctx, t, r, examplePrepareArgs(r, BashImage, nil, nil))
	if resp.Context.Container == nil {
		t.Fatalf("no context.container")
	}
	res := mustStep(ctx, t, r, actionsrunner.Step{Script: `id -u
echo data > file.txt && cat file.txt
touch "$HOME/.marker"
echo "WHO=$(id -u)" >> "$GITHUB_ENV"`})
	if res.ExitCode != 0 || string(res.Stdout) != "1001\ndata\n" || r.JobEnv["WHO"] != "1001" {
		t.Errorf("step as user 1001: exit %d, stdout %q, GITHUB_ENV %q, stderr %s", res.ExitCode, res.Stdout, r.JobEnv, res.Stderr)
	}
	cleanupLeavesNothing(ctx, t, c, ns, r)
}
