//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tether-ci/tether/internal/testing/faultproxy"
)

// structuredRecord matches a slog record (text or JSON) in a job log.
var structuredRecord = regexp.MustCompile(`(?m)(^time=|level=|"level":)`)

// proxiedKubeconfig writes a copy of the cluster's kubeconfig whose server
// is a fault proxy in front of the API server, and returns its path and
// the proxy: every connection a driver process makes goes through it.
func proxiedKubeconfig(t *testing.T, c *Cluster) (string, *faultproxy.Proxy) {
	t.Helper()
	proxy := apiFaultProxy(t, c)
	kc, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range kc.Clusters {
		cl.Server = "https://" + proxy.Addr()
	}
	proxied := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, proxied); err != nil {
		t.Fatal(err)
	}
	return proxied, proxy
}

// driverLines checks that rest, what a job log holds after a stage's
// output, is whole lines of the driver's own, each a WARNING: or ERROR:
// sentence, and returns them.
func driverLines(t *testing.T, rest string) []string {
	t.Helper()
	if rest == "" {
		return nil
	}
	if !strings.HasSuffix(rest, "\n") {
		t.Fatalf("the job log ends inside a driver line: %q", rest)
	}
	lines := strings.Split(strings.TrimSuffix(rest, "\n"), "\n")
	for _, l := range lines {
		if !strings.HasPrefix(l, "WARNING: tether: ") && !strings.HasPrefix(l, "ERROR: tether: ") {
			t.Fatalf("a driver line in the job log that is not a WARNING:/ERROR: sentence: %q (all: %q)", l, rest)
		}
	}
	return lines
}

// TestGitLabJobLogIsTheScriptsBytes: a stage prints a line without a
// newline, a number a second, while every API connection of `tether
// gitlab run` is cut 3 times. The job log (run's stdout and stderr in one
// pipe, as the runner merges them) is the script's bytes, then a newline
// (the script's line had none), then only whole driver lines: the
// reconnects said once, as a WARNING. Prepare's log holds sentences, no
// structured records.
func TestGitLabJobLogIsTheScriptsBytes(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-joblog")
	r := newRunnerStandIn(t, c, ns, nil)

	prep := r.command(ctx, "prepare")
	prepLog := &safeBuffer{}
	prep.Stdout, prep.Stderr = prepLog, prepLog
	err := prep.Run()
	t.Logf("prepare:\n%s", prepLog.Bytes())
	t.Cleanup(func() { r.cleanup(context.Background()) })
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	if m := structuredRecord.Find(prepLog.Bytes()); m != nil {
		t.Fatalf("prepare's job log holds a structured record (%q):\n%s", m, prepLog.Bytes())
	}
	if !strings.Contains(string(prepLog.Bytes()), "tether: pod "+ns+"/") || strings.Count(string(prepLog.Bytes()), " created") != 1 {
		t.Fatalf("prepare's job log does not say once which pod it created:\n%s", prepLog.Bytes())
	}

	kubeconfig, proxy := proxiedKubeconfig(t, c)
	const script = "for i in 1 2 3 4 5 6 7 8 9; do printf \"$i.\"; sleep 1; done\n"
	const want = "1.2.3.4.5.6.7.8.9."
	cmd := r.command(ctx, "run", "--kubeconfig", kubeconfig, r.stageScript("step_script", script, nil), "step_script")
	jobLog := &safeBuffer{}
	cmd.Stdout, cmd.Stderr = jobLog, jobLog // one pipe, as the runner's
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Once "1." arrived, cut every connection three times, 2 s apart: each
	// cut lands inside the script's line.
	cutsDone := cutRepeatedly(ctx, proxy, func() bool { return strings.Contains(string(jobLog.Bytes()), "1.") }, 3, 2*time.Second)
	err = cmd.Wait()
	hits := <-cutsDone
	got := string(jobLog.Bytes())
	t.Logf("%d cuts; job log %q", hits, got)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if hits < 3 {
		t.Fatalf("only %d cuts hit a connection", hits)
	}
	if !strings.HasPrefix(got, want+"\n") {
		t.Fatalf("the job log does not start with the script's bytes and a newline of the driver's: %q", got)
	}
	lines := driverLines(t, got[len(want)+1:])
	if len(lines) != 1 || !regexp.MustCompile(`^WARNING: tether: the connection to pod \S+ broke ([3-9]|\d\d+) times while stage step_script ran \(.+ without one in all\); the stage ran on and its output resumed where it stopped, nothing lost or repeated$`).MatchString(lines[0]) {
		t.Fatalf("the driver's lines after the output: %q; want the reconnects said once", lines)
	}
	r.cleanup(ctx)
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}

// reconnectCount is N of the driver's "broke N times" line, or 0.
func reconnectCount(line string) int {
	var n int
	if m := regexp.MustCompile(`broke (\d+) times`).FindStringSubmatch(line); m != nil {
		fmt.Sscan(m[1], &n)
	}
	return n
}

// runMerged starts cmd with its stdout and stderr in one pipe and returns
// the pipe's reading end.
func runMerged(t *testing.T, cmd *exec.Cmd) *os.File {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close() })
	return pr
}

// TestGitLabJobLogPodDeleted: the job's pod is deleted while a stage
// prints a line without a newline. The stage is a system failure, and the
// job log is still the script's bytes, then a newline, then only whole
// WARNING:/ERROR: lines of the driver's: nothing the shim wrote to its
// stderr while stopping, and no structured record, lands in it.
func TestGitLabJobLogPodDeleted(t *testing.T) {
	c := NewCluster(t)
	ctx := t.Context()
	ns := c.NewNamespace(t, "gitlab-podgone")
	r := newRunnerStandIn(t, c, ns, nil)
	r.prepare(ctx)
	const script = "i=1\nwhile [ $i -le 60 ]; do printf \"$i.\"; i=$((i+1)); sleep 1; done\n"
	cmd := r.command(ctx, "run", r.stageScript("step_script", script, nil), "step_script")
	jobLog := &safeBuffer{}
	cmd.Stdout, cmd.Stderr = jobLog, jobLog // one pipe, as the runner's
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(string(jobLog.Bytes()), "3.") {
		if time.Now().After(deadline) {
			t.Fatalf("no 3. in the job log after a minute: %q", jobLog.Bytes())
		}
		time.Sleep(50 * time.Millisecond)
	}
	name := "tether-gitlab-r7-j" + r.jobID
	if err := c.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod %s/%s: %v", ns, name, err)
	}
	err := cmd.Wait()
	got := string(jobLog.Bytes())
	t.Logf("run: %v; job log %q", err, got)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != standInSystemFailure {
		t.Fatalf("run: %v; want the system failure code %d", err, standInSystemFailure)
	}
	// The runner's script runs its commands in a pipeline (`: | eval …`):
	// when the pod's deletion TERMs it, bash itself reports the pipeline
	// "Terminated" — the script's own output, not the shim's.
	i := strings.IndexByte(got, '\n')
	if i < 0 || !regexp.MustCompile(`^1\.2\.3\.(\d+\.)*(Terminated)?$`).MatchString(got[:i]) {
		t.Fatalf("the job log does not start with the script's bytes and a newline: %q", got)
	}
	lines := driverLines(t, got[i+1:])
	if len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], "ERROR: tether: stage step_script in pod "+ns+"/"+name) {
		t.Fatalf("the driver's lines after the output: %q; want an ERROR line naming the stage and pod last", lines)
	}
	r.cleanup(ctx)
	waitNoTetherObjects(ctx, t, c, ns, 60*time.Second)
}
