package actions

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/testing/attachserver"
)

// stepShimCmd is the command of a container step's ephemeral container as
// the kubelet would start it on this host: the real tether-shim with the
// container's arguments (host directories for the pod's spool and files
// volumes) and the step's env Secret as its environment.
func stepShimCmd(step *containerStep, spool, files string) *exec.Cmd {
	var args []string
	for _, a := range step.container.Args {
		switch {
		case strings.HasPrefix(a, "--spool-dir="):
			a = "--spool-dir=" + spool
		case strings.HasPrefix(a, "--files-dir="):
			a = "--files-dir=" + files
		}
		args = append(args, a)
	}
	cmd := exec.Command(filepath.Join(binDir, "tether-shim"), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range step.env {
		cmd.Env = append(cmd.Env, k+"="+string(v))
	}
	return cmd
}

// A container step's variables named TETHER_* reach its program, never
// its tether-shim's settings: the step's shim (a real process, its
// environment the step's env Secret) starts although a step variable
// names a shim setting with a value the shim would refuse, and the
// program, run over the attach stream as the hook runs it, sees every
// variable of the step.
func TestContainerStepShimVariablesReachTheProgramOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := &Container{Image: "alpine:3", EnvironmentVariables: map[string]string{
		"TETHER_IDLE_TIMEOUT": "not-a-duration", "TETHER_TOKEN": "t-1", "PLAIN": "p-1"}}
	files := t.TempDir()
	shim := stepShim{args: []string{"--spool-dir=/tether/spool-step-1", "--files-dir=" + kube.FilesDir}}
	step, err := buildContainerStep(args, "step-1", "pod-step-1-env", shim, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	for k := range step.env {
		if strings.HasPrefix(k, kube.ShimEnvPrefix) {
			t.Errorf("the step's env Secret holds %s: it would configure the step's shim", k)
		}
	}
	srv, err := attachserver.Start(attachserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if _, err := srv.AddContainer("ci", "pod", "step-1", stepShimCmd(step, t.TempDir(), files)); err != nil {
		t.Fatal(err)
	}
	job, err := stepJob(files, "pod-step-1", []string{"sh", "-c", `echo "idle=$TETHER_IDLE_TIMEOUT token=$TETHER_TOKEN plain=$PLAIN"`}, step.shimEnv)
	if err != nil {
		t.Fatal(err)
	}
	tr := &kube.Transport{Config: srv.RESTConfig(""), Namespace: "ci", Pod: "pod", Container: "step-1"}
	var out bytes.Buffer
	res, err := client.Run(ctx, tr, job, client.Options{Output: &out, ExitShim: true, ReconnectTimeout: 10 * time.Second})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("the step: %v, exit %d, output %q", err, res.ExitCode, out.String())
	}
	if want := "idle=not-a-duration token=t-1 plain=p-1\n"; out.String() != want {
		t.Errorf("the program's output %q, want %q", out.String(), want)
	}
}

// A container step's shim that its hook never reaches (the step cancelled
// before its container started) ends on its own: its idle timeout is the
// one shimOfPod gives it, whatever the job container's, and the pod's
// activity (another shim's marks of the shared activity file, kept fresh
// here) does not hold it. The shim is a real process.
func TestContainerStepShimNobodyReachesEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	act := filepath.Join(t.TempDir(), "activity")
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "ci", CreationTimestamp: metav1.Now()},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: kube.BuildContainer, Command: []string{kube.ShimPath},
			Args: []string{"--spool-dir=" + kube.SpoolDir, "--files-dir=" + kube.FilesDir, "--idle-timeout=30m0s", "--activity-file=" + act}}}},
	}
	shim, err := shimOfPod(p, "step-1", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	step, err := buildContainerStep(&Container{Image: "alpine:3"}, "step-1", "pod-step-1-env", shim, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	// The job container's shim runs a long step meanwhile: it marks the
	// activity file (a write sets its modification time).
	go func() {
		for ctx.Err() == nil {
			_ = os.WriteFile(act, []byte{0}, 0o666)
			time.Sleep(200 * time.Millisecond)
		}
	}()
	cmd := stepShimCmd(step, t.TempDir(), t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe() // open, never written: no client
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the step's shim nobody reached still runs; stderr:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "no command or ping for 2s") {
		t.Errorf("the shim ended, but not on its idle timeout; stderr:\n%s", stderr.String())
	}
}
