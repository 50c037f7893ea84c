//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/integration/actions"
	"github.com/tether-ci/tether/internal/testing/actionsrunner"
)

// containerStepScript is what the container step with an explicit entry
// point runs (written into the workspace by a script step): it reads the
// file the script step wrote, prints an argument, an input, partial and
// binary lines and a line longer than the runtime's 16 KiB log chunks,
// writes a step output and a file for the next step, and exits 3.
const containerStepScript = `cat before.txt
printf 'arg=[%s] who=[%s] home=[%s] pwd=[%s]\n' "$1" "$INPUT_WHO" "$HOME" "$(pwd)"
printf 'partial-'
sleep 1
printf 'rest\n'
printf '\000\377\376bin\rary\r\n'
head -c 40000 /dev/zero | tr '\000' 'L'
printf '\n'
cat "$GITHUB_EVENT_PATH"; printf '\n'
echo "out=ok" >> "$GITHUB_OUTPUT"
echo made-by-container > after.txt
printf 'no newline at the end'
exit 3
`

// containerStepWant is containerStepScript's output.
func containerStepWant() string {
	return "from-script\n" +
		"arg=[two words] who=[world & co] home=[/github/home] pwd=[/github/workspace]\n" +
		"partial-rest\n" +
		// Byte for byte, the carriage return before the newline too.
		"\x00\xff\xfebin\rary\r\n" +
		strings.Repeat("L", 40000) + "\n" +
		`{"ref":"refs/heads/main"}` + "\n" +
		"no newline at the end"
}

// TestActionsContainerStep runs container steps as the runner does for a
// container action: in the job's own workspace (it sees what a script step
// wrote, the next script step sees what it wrote), its output byte-exact,
// its exit code, its GITHUB_OUTPUT back at the runner, its env only in a
// Secret deleted after the step (TETHER_* variables in a variables file
// over the stream, reaching the program, not the shim); the image's own ENTRYPOINT when the action
// names none; an image that cannot be pulled and a Dockerfile action fail
// clearly; cleanup_job leaves nothing.
func TestActionsContainerStep(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "actions-cstep")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	// A short idle timeout: a container step runs beside the shim, and
	// the hook must keep the shim from ending the pod under a long one.
	// The action's image comes from a registry (on loopback): the hook
	// reads its ENTRYPOINT there, the kubelet pulls it (IfNotPresent:
	// the other images are on the node).
	actionImage := serveImage(t, "action")
	r := newActionsRunner(t, c, ns, actions.EnvIdleTimeout+"=8s", actions.EnvPullPolicy+"=IfNotPresent")
	// No credentials for the job: its pod's pull Secret exists anyway, so a
	// container step's credentials can join it.
	if res, err := r.PrepareJob(ctx, BashImage, nil, nil); err != nil || res.ExitCode != 0 {
		t.Fatalf("prepare_job: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
	}
	var st struct{ TetherPod string }
	if err := json.Unmarshal(r.State, &st); err != nil || st.TetherPod == "" {
		t.Fatalf("state %s: %v", r.State, err)
	}
	script := fmt.Sprintf("echo from-script > before.txt\ncat > step.sh <<'EOF'\n%sEOF\n", containerStepScript)
	mustStep(ctx, t, r, actionsrunner.Step{Script: script})

	res, err := r.RunContainer(ctx, actionsrunner.ContainerStep{
		Image: BusyboxImage, EntryPoint: "sh", Args: []string{"./step.sh", "two words"},
		Inputs: map[string]string{"who": "world & co"}, Env: map[string]string{"STEP_SECRET": "s3cret"},
	})
	if err != nil {
		t.Fatalf("run_container_step: %v\nstderr %s", err, res.Stderr)
	}
	if want := containerStepWant(); string(res.Stdout) != want {
		t.Fatalf("the container step's output differs: got %d bytes %q...\nwant %d bytes; stderr %s",
			len(res.Stdout), res.Stdout[:min(len(res.Stdout), 300)], len(want), res.Stderr)
	}
	if res.ExitCode != 3 {
		t.Fatalf("exit %d, want 3; stderr %s", res.ExitCode, res.Stderr)
	}
	if r.Outputs["out"] != "ok" {
		t.Fatalf("GITHUB_OUTPUT of the container step did not reach the runner: %v; stderr %s", r.Outputs, res.Stderr)
	}
	// The env is only in a Secret (envFrom), which is gone after the step.
	pod, err := c.Client.CoreV1().Pods(ns).Get(ctx, st.TetherPod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(pod.Spec.EphemeralContainers); n != 1 {
		t.Fatalf("%d ephemeral containers, want 1", n)
	}
	ec := pod.Spec.EphemeralContainers[0]
	if len(ec.Env) != 1 || ec.Env[0].Name != "PWD" || len(ec.EnvFrom) != 1 || ec.EnvFrom[0].SecretRef == nil {
		t.Fatalf("the step's env is not (only) in a Secret: env %v envFrom %+v", ec.Env, ec.EnvFrom)
	}
	spec, _ := json.Marshal(pod.Spec)
	if bytes.Contains(spec, []byte("s3cret")) || bytes.Contains(spec, []byte("world & co")) {
		t.Fatal("the step's env is in the pod spec")
	}
	if _, err := c.Client.CoreV1().Secrets(ns).Get(ctx, ec.EnvFrom[0].SecretRef.Name, metav1.GetOptions{}); err == nil {
		t.Fatalf("the step's env Secret %s is still there after the step", ec.EnvFrom[0].SecretRef.Name)
	}
	after := mustStep(ctx, t, r, actionsrunner.Step{Script: "cat after.txt"})
	if string(after.Stdout) != "made-by-container\n" || after.ExitCode != 0 {
		t.Fatalf("the next script step does not see the container step's file: exit %d, %q; stderr %s", after.ExitCode, after.Stdout, after.Stderr)
	}

	// A step longer than the idle timeout: the pod stays.
	res, err = r.RunContainer(ctx, actionsrunner.ContainerStep{Image: BusyboxImage, EntryPoint: "sh", Args: []string{"-c", "sleep 20; echo awake"}})
	if err != nil || res.ExitCode != 0 || string(res.Stdout) != "awake\n" {
		t.Fatalf("a step longer than the idle timeout: %v, exit %d, stdout %q, stderr %s", err, res.ExitCode, res.Stdout, res.Stderr)
	}

	// Step variables named TETHER_* reach the program, never the step's
	// shim (a value it would refuse as its idle timeout does not stop it).
	res, err = r.RunContainer(ctx, actionsrunner.ContainerStep{Image: BusyboxImage, EntryPoint: "sh",
		Args: []string{"-c", `echo "$TETHER_IDLE_TIMEOUT $TETHER_NOTE"`}, Env: map[string]string{"TETHER_IDLE_TIMEOUT": "bogus", "TETHER_NOTE": "n-1"}})
	if err != nil || res.ExitCode != 0 || string(res.Stdout) != "bogus n-1\n" {
		t.Fatalf("a step with TETHER_* variables: %v, exit %d, stdout %q, stderr %s", err, res.ExitCode, res.Stdout, res.Stderr)
	}

	// No runs.entrypoint: the image's own ENTRYPOINT, read from its
	// registry, runs with the args. Its registry credentials join the job
	// pod's pull Secret.
	res, err = r.RunContainer(ctx, actionsrunner.ContainerStep{Image: actionImage, Args: []string{"hello there", `say "hi"`},
		Registry: map[string]string{"username": "u", "password": "step-token", "serverUrl": "step.example.com"}})
	if err != nil {
		t.Fatalf("run_container_step: %v\nstderr %s", err, res.Stderr)
	}
	if want := "entrypoint ran in /github/workspace with 2 args: [hello there] [say \"hi\"]\n"; string(res.Stdout) != want || res.ExitCode != 0 {
		t.Fatalf("the image's ENTRYPOINT: exit %d, stdout %q, want %q; stderr %s", res.ExitCode, res.Stdout, want, res.Stderr)
	}
	if r.Outputs["entrypoint"] != "hello there" {
		t.Fatalf("outputs %v", r.Outputs)
	}
	pull, err := c.Client.CoreV1().Secrets(ns).Get(ctx, st.TetherPod+"-pull", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg := string(pull.Data[corev1.DockerConfigJsonKey]); !strings.Contains(cfg, `"step.example.com":{"auth":"dTpzdGVwLXRva2Vu"`) {
		t.Fatalf("the pull Secret after a step with credentials: %s", cfg)
	}
	if strings.Contains(string(res.Stderr), "cannot be used") {
		t.Fatalf("the step's credentials were not used: %s", res.Stderr)
	}

	// An image that cannot be pulled fails with the kubelet's reason.
	res, err = r.RunContainer(ctx, actionsrunner.ContainerStep{Image: "localhost/tether/no-such-image:cstep", EntryPoint: "sh"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == 0 || !strings.Contains(string(res.Stderr), "cannot start") || !strings.Contains(string(res.Stderr), "no-such-image") {
		t.Fatalf("an unpullable image: exit %d, stderr %s", res.ExitCode, res.Stderr)
	}

	// A Dockerfile action fails, saying what to do.
	dockerfile := filepath.Join(r.Work, "_actions", "o", "a", "v1", "Dockerfile")
	if err := os.MkdirAll(filepath.Dir(dockerfile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dockerfile, []byte("FROM busybox\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = r.RunContainer(ctx, actionsrunner.ContainerStep{Dockerfile: dockerfile})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 1 || !strings.Contains(string(res.Stderr), "Dockerfile") || !strings.Contains(string(res.Stderr), "docker://") {
		t.Fatalf("a Dockerfile action: exit %d, stderr %s", res.ExitCode, res.Stderr)
	}

	// A cancel (SIGINT) stops the step's program through its shim: the
	// hook ends non-zero saying so, and the step's container ends.
	out := &safeBuffer{}
	r.Tee = out
	stepCtx, stop := context.WithCancel(ctx)
	go func() {
		for !strings.Contains(string(out.Bytes()), "started") && stepCtx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
		stop()
	}()
	res, err = r.RunContainer(stepCtx, actionsrunner.ContainerStep{Image: BusyboxImage, EntryPoint: "sh", Args: []string{"-c", "echo started; sleep 600"}})
	stop()
	r.Tee = nil
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == 0 || !strings.Contains(string(res.Stderr), "cancelled") || !strings.Contains(string(res.Stderr), "ended with exit code 143") {
		t.Fatalf("a cancelled container step: exit %d, stdout %q, stderr %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	c.WaitFor(ctx, t, "the cancelled step's container to end", func(ctx context.Context) (bool, error) {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, st.TetherPod, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, s := range p.Status.EphemeralContainerStatuses {
			if s.Name == p.Spec.EphemeralContainers[len(p.Spec.EphemeralContainers)-1].Name {
				return s.State.Terminated != nil, nil
			}
		}
		return false, nil
	})
	cleanupLeavesNothing(ctx, t, c, ns, r)
}

// TestActionsContainerStepSurvivesCuts cuts every API connection of the
// hook five times while a container step runs: its output arrives exact
// (nothing lost, nothing repeated), its exit code and GITHUB_OUTPUT too.
func TestActionsContainerStepSurvivesCuts(t *testing.T) {
	c := NewCluster(t)
	ns := c.NewNamespace(t, "actions-cstep-cuts")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	kubeconfig, proxy := proxiedKubeconfig(t, c)
	r := newActionsRunner(t, c, ns, actions.EnvKubeconfig+"="+kubeconfig)
	if res, err := r.PrepareJob(ctx, BashImage, nil, nil); err != nil || res.ExitCode != 0 {
		t.Fatalf("prepare_job: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
	}
	script, want := steadyScript(300, "0.05", 7)
	script = `echo "CUT=survived" >> "$GITHUB_OUTPUT"` + "\n" + script
	mustStep(ctx, t, r, actionsrunner.Step{Script: fmt.Sprintf("cat > steady.sh <<'EOF'\n%sEOF\n", script)})
	out := &safeBuffer{}
	r.Tee = out
	cutsDone := cutRepeatedly(ctx, proxy, func() bool { return out.Len() > 0 }, 5, time.Second)
	res, err := r.RunContainer(ctx, actionsrunner.ContainerStep{Image: BusyboxImage, EntryPoint: "sh", Args: []string{"./steady.sh"}})
	if err != nil {
		t.Fatalf("run_container_step: %v\nstderr %s", err, res.Stderr)
	}
	stepSurvivedCuts(t, cutsDone, 5, res, want)
	if res.ExitCode != 7 || r.Outputs["CUT"] != "survived" {
		t.Fatalf("exit %d (want 7), GITHUB_OUTPUT %q; stderr %s", res.ExitCode, r.Outputs, res.Stderr)
	}
	r.Tee = nil
	cleanupLeavesNothing(ctx, t, c, ns, r)
}
