package gitlab

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/errors"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/testing/attachserver"
)

// Each stage (a new transport, as a new `tether gitlab run` process has)
// costs one attach and no other request, and gets its own output alone
// although the earlier stages' records stay in the shim's stream.
func TestGitLabStageIsOneAttach(t *testing.T) {
	srv, err := attachserver.Start(attachserver.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	c, err := srv.AddContainer("ci", "p", kube.BuildContainer, exec.Command(filepath.Join(binDir, "tether-shim"), "--spool-dir="+t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Kill)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, body := range []string{"echo one\n", "printf 'two\\n%.0s' 1 2 3\nexit 4\n", "echo three\n"} {
		script := filepath.Join(dir, "s.sh")
		if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		tr := (&kube.Pod{Namespace: "ci", Name: "p", Container: kube.BuildContainer}).Transport(srv.RESTConfig(""), kube.TransportOptions{})
		var out bytes.Buffer
		res, _, err := runStage(ctx, tr, client.Job{Scripts: []string{script}}, client.Options{Output: &out}, stageStart{})
		if err != nil {
			t.Fatalf("stage %d: %v", i, err)
		}
		want := map[int]string{0: "one\n", 1: "two\ntwo\ntwo\n", 2: "three\n"}[i]
		if out.String() != want || res.ExitCode != map[int]int{1: 4}[i] {
			t.Fatalf("stage %d: output %q exit %d, want %q", i, out.String(), res.ExitCode, want)
		}
	}
	// One attach per stage and nothing else: the pod is read, and
	// watched for disruptions, only once an attach failed.
	got := srv.UserAgents()
	if n := len(got["attach-websocket"]) + len(got["attach-spdy"]); n != 3 || len(got) != 1 {
		t.Errorf("requests by kind %v; want 3 attaches and nothing else", got)
	}
}

// An attach the API server refuses (credentials or permissions) ends the
// stage at once with what to do, not after minutes of retries.
func TestGitLabStageRefused(t *testing.T) {
	dir := t.TempDir()
	env := runnerEnv(t, dir, `{"id": 5}`)
	_, kc := newAPIServer(t, dir, func(w http.ResponseWriter, r *http.Request) {
		status(w, http.StatusForbidden, "Forbidden", `pods "tether-gitlab-r3-j5" is forbidden`)
	})
	_, transport, _, err := gitlabPod(parsed(t, env, "--kubeconfig", kc), env, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, _, err = runStage(ctx, transport(kube.TransportOptions{}), client.Job{Scripts: []string{"/s"}}, client.Options{Output: io.Discard}, stageStart{})
	if !errors.IsForbidden(err) || !strings.Contains(err.Error(), "bind the runner's identity") || ctx.Err() != nil {
		t.Fatalf("runStage: %v (context: %v); want the refusal with advice, at once", err, ctx.Err())
	}
}
