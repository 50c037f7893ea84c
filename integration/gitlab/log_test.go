package gitlab

import (
	"bytes"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/protocol"
)

// structured matches a slog record in text or JSON form.
var structured = regexp.MustCompile(`(?m)(^time=|level=|"level":)`)

// prepare's progress (the kube package's records) reaches the job log as
// sentences, each fact once, warnings marked as GitLab marks them; the
// driver's structured log gets every record only when one was asked for.
func TestGitLabJobLogSentences(t *testing.T) {
	var jobLog, detail bytes.Buffer
	f := Settings{}
	log := f.jobLog(&jobLog)
	podLog := log.With("pod", "ci/job-1")
	log.Info("pod created", "pod", "ci/job-1")
	log.Info("pod phase", "pod", "ci/job-1", "phase", "Pending")
	log.Info("pod event", "pod", "ci/job-1", "reason", "Scheduled", "message", "Successfully assigned ci/job-1 to node")
	log.Warn("pod event", "pod", "ci/job-1", "reason", "BackOff", "message", "Back-off pulling image \"nope:1\"")
	log.Info("pod phase", "pod", "ci/job-1", "phase", "Running")
	log.Debug("attach over WebSocket refused, trying SPDY", "err", errors.New("403"))
	podLog.Info("the API server drops image volumes: an init container copies the shim instead")
	want := "Waiting for pod ci/job-1 to be running: it is Pending\n" +
		"Pod ci/job-1: Scheduled: Successfully assigned ci/job-1 to node\n" +
		"WARNING: Pod ci/job-1: BackOff: Back-off pulling image \"nope:1\"\n" +
		"The API server drops image volumes: an init container copies the shim instead (pod: ci/job-1)\n"
	if jobLog.String() != want {
		t.Fatalf("job log:\n%s\nwant:\n%s", jobLog.String(), want)
	}

	// With a structured log asked for, it gets every record besides.
	jobLog.Reset()
	f.log = slog.New(slog.NewTextHandler(&detail, &slog.HandlerOptions{Level: slog.LevelDebug}))
	log = f.jobLog(&jobLog)
	log.Info("pod phase", "pod", "ci/job-1", "phase", "Pending")
	log.Debug("cannot check the runner's permissions; going on", "err", errors.New("boom"))
	if jobLog.String() != "Waiting for pod ci/job-1 to be running: it is Pending\n" || structured.MatchString(jobLog.String()) {
		t.Errorf("job log with a structured log beside it: %q", jobLog.String())
	}
	if !strings.Contains(detail.String(), `level=INFO msg="pod phase" pod=ci/job-1 phase=Pending`) ||
		!strings.Contains(detail.String(), `level=DEBUG msg="cannot check the runner's permissions; going on" err=boom`) {
		t.Errorf("structured log:\n%s", detail.String())
	}
}

// A stage's notices: the connections that broke (with the time without
// one) and the shim's log read after the shim was gone, one line each.
func TestGitLabStageNotices(t *testing.T) {
	now := time.Unix(1000, 0)
	n := newStageNotices()
	n.now = func() time.Time { return now }
	if got := n.lines("build_script", "pod ci/p"); len(got) != 0 {
		t.Fatalf("notices of a quiet stage: %q", got)
	}
	for i := range 3 {
		n.event(client.Event{Kind: client.EventDisconnected, Attempt: i + 1, Err: errors.New("EOF")})
		now = now.Add(400 * time.Millisecond)
		n.event(client.Event{Kind: client.EventConnected, Attempt: i + 2})
		now = now.Add(time.Second)
	}
	got := n.lines("build_script", "pod ci/p")
	want := "WARNING: tether: the connection to pod ci/p broke 3 times while stage build_script ran (1.2s without one in all); the stage ran on and its output resumed where it stopped, nothing lost or repeated"
	if len(got) != 1 || got[0] != want {
		t.Fatalf("notices %q\nwant %q", got, want)
	}

	// The last loss never healed: the shim was gone, its log read.
	n.event(client.Event{Kind: client.EventDisconnected, Attempt: 4})
	n.event(client.Event{Kind: client.EventLogReplay, Offset: 42})
	n.event(client.Event{Kind: client.EventShimError, Message: "unknown command"})
	got = n.lines("build_script", "pod ci/p")
	if len(got) != 3 || got[0] != "WARNING: tether: the connection to pod ci/p broke 4 times while stage build_script ran" ||
		!strings.Contains(got[1], "the rest of the stage's output was read from the container's log") ||
		got[2] != "WARNING: tether: the shim in pod ci/p rejected a command: unknown command" {
		t.Fatalf("notices %q", got)
	}
}

// How a stage ended is one line at most: a cancel (four lines once) says
// the signal and the script's code; a timeout's note is not repeated as
// an error; a success says nothing.
func TestGitLabOutcomeLine(t *testing.T) {
	cancelled := client.Result{ExitCode: 143, Cancelled: true, Statuses: []protocol.Status{{CommandExitCode: 143, Error: "cancelled by the client"}}}
	cancelErr := errors.New("job cancelled: received SIGTERM")
	sigterm := errors.New("received SIGTERM")
	deadline := client.Result{ExitCode: 124, Exit: &protocol.Exit{Reason: protocol.ReasonDeadline}}
	lost := errors.New("no result")
	for _, tc := range []struct {
		name string
		res  client.Result
		err  error
		want string
	}{
		{"success", client.Result{}, nil, ""},
		{"script failed", client.Result{ExitCode: 3}, nil, ""},
		{"cancelled", cancelled, cancelErr, "WARNING: tether: stage build_script was cancelled (received SIGTERM): its script was stopped and ended with exit code 143"},
		{"deadline", deadline, lost, "ERROR: tether: the job's timeout (1m0s) passed: stage build_script was stopped"},
		{"system", client.Result{}, lost, "ERROR: tether: stage build_script in pod ci/p (container build) failed: no result"},
	} {
		out := stageOutcome(tc.res, tc.err, time.Minute, 0, "build_script")
		if got := outcomeLine("build_script", "pod ci/p", "build", out, tc.res, tc.err, sigterm); got != tc.want {
			t.Errorf("%s: %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
