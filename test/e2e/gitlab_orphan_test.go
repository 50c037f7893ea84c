//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/protocol"
)

// orphanIdle is the driver's idle-timeout in these tests: short, so they
// are quick.
const orphanIdle = 20 * time.Second

// standInPod returns the name of the job's pod (the stand-in's namespace
// holds only it).
func standInPod(ctx context.Context, t *testing.T, c *Cluster, ns string) string {
	t.Helper()
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("%d pods in %s, want the job's one", len(pods.Items), ns)
	}
	return pods.Items[0].Name
}

// TestGitLabOrphanPodEndsItself: the runner is SIGKILLed mid-stage (its
// `tether gitlab run` process with it, and nobody runs cleanup): the
// stage's script still runs to its end, then the pod ends by itself within
// the idle timeout (the build container's shim exits idle, 125; the
// kubelet stops the helper container), not at the job's deadline.
func TestGitLabOrphanPodEndsItself(t *testing.T) {
	const work = 20 * time.Second
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-orphan")
	r := newRunnerStandInJob(t, c, ns, standInJob{Config: "idle-timeout: " + orphanIdle.String() + "\n", Timeout: time.Hour})
	r.prepare(ctx)
	pod := standInPod(ctx, t, c, ns)
	c.DumpPodOnFailure(t, ns, pod)

	cmd := r.command(ctx, "run", r.stageScript("build_script", fmt.Sprintf("echo started\nsleep %d\necho finished\n", int(work.Seconds())), nil), "build_script")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "started\n" {
		t.Fatalf("first line %q: %v", line, err)
	}
	// The script started before its first line arrived: it ends by
	// started + work, and the pod by that plus the idle timeout.
	started := time.Now()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	const margin = 40 * time.Second
	bound := work + orphanIdle + margin
	got := c.WaitPodPhase(ctx, t, ns, pod, corev1.PodFailed, bound+time.Minute)
	ended := time.Since(started)
	var finished time.Time
	for _, st := range got.Status.ContainerStatuses {
		if st.Name != kube.BuildContainer {
			continue
		}
		if st.State.Terminated == nil || st.State.Terminated.ExitCode != 125 {
			t.Fatalf("build container state %+v; want terminated with 125 (idle)", st.State)
		}
		finished = st.State.Terminated.FinishedAt.Time
	}
	for _, st := range got.Status.InitContainerStatuses {
		if st.Name == kube.HelperContainer && st.State.Terminated == nil {
			t.Fatalf("helper container state %+v; want terminated", st.State)
		}
	}
	t.Logf("the pod ended %v after the SIGKILL (the script ran %v more, the idle timeout is %v); the build container finished at %v",
		ended.Round(time.Second), work, orphanIdle, finished.Sub(started).Round(time.Second))
	if ended > bound {
		t.Fatalf("the orphaned pod ended %v after its runner was killed, more than the stage's end + the idle timeout + %v (%v)", ended, margin, bound)
	}
	// The idle clock counted from the script's end (half the idle timeout
	// of slack: FinishedAt has whole seconds, and started came after the
	// script began, later on a loaded machine).
	if early := started.Add(work + orphanIdle/2); finished.Before(early) {
		t.Fatalf("the build container finished at started+%v, before the script's end + the idle timeout", finished.Sub(started))
	}
	raw, err := c.Client.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: kube.BuildContainer}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var last string
	var sawFinished bool
	for _, l := range strings.Split(string(raw), "\n") {
		rec, _, err := protocol.Parse([]byte(l+"\n"), nil)
		if err != nil {
			continue
		}
		last = l
		if rec.Type == protocol.TypeOutput && strings.Contains(string(rec.Payload), "finished") {
			sawFinished = true
		}
	}
	if !sawFinished || !strings.HasPrefix(last, "x ") || !strings.Contains(last, `"reason":"idle"`) {
		t.Fatalf("the build container's log: script finished %v, last record %q; want the script's last line and the idle final record\n%s", sawFinished, last, raw)
	}
}

// TestGitLabLongHelperStageKeepsBuildContainer: a stage in the helper
// container running twice the idle timeout (an artifact upload) does not
// end the build container, whose shim hears nothing meanwhile: both
// containers' shims share the pod's idle clock. The build container's
// next stage still runs. Each stage's process start to its script's first
// line is logged: the gap between stages when no shim of the pod works.
func TestGitLabLongHelperStageKeepsBuildContainer(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-helper-idle")
	r := newRunnerStandInJob(t, c, ns, standInJob{Config: "idle-timeout: " + orphanIdle.String() + "\n"})
	prepared := time.Now()
	r.prepare(ctx)
	t.Logf("prepare took %v", time.Since(prepared).Round(time.Millisecond))
	pod := standInPod(ctx, t, c, ns)
	c.DumpPodOnFailure(t, ns, pod)

	stage := func(name, body, want string) {
		t.Helper()
		start := time.Now()
		got, code, _ := r.run(ctx, name, "echo begin\n"+body, nil)
		took := time.Since(start)
		if code != 0 || got != "begin\n"+want {
			t.Fatalf("%s: exit %d, output %q; want 0 and %q", name, code, got, "begin\n"+want)
		}
		t.Logf("stage %s: %v from the process's start to its exit", name, took.Round(time.Millisecond))
	}
	stage("prepare_script", "", "")
	stage("build_script", "echo artifact > out.txt\n", "")
	// Twice the idle timeout in the helper container (git is in its image,
	// not in the build image).
	stage("upload_artifacts_on_success", fmt.Sprintf("command -v git >/dev/null && echo in-helper\nsleep %d\ncat out.txt\n", int((2*orphanIdle).Seconds())), "in-helper\nartifact\n")
	p, err := c.Client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range p.Status.ContainerStatuses {
		if st.Name == kube.BuildContainer && st.State.Running == nil {
			t.Fatalf("the build container is not running after the long helper stage: %+v", st.State)
		}
	}
	stage("cleanup_file_variables", "cat out.txt\n", "artifact\n")
	r.cleanup(ctx)
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}
