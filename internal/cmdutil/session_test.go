package cmdutil

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
)

func TestOOMText(t *testing.T) {
	for limit, want := range map[int64]string{
		0:         "out of memory",
		64 << 20:  "out of memory (limit 64Mi)",
		1 << 30:   "out of memory (limit 1Gi)",
		100000000: "out of memory (limit 100M)",
	} {
		if got := OOMText(limit); got != want {
			t.Errorf("OOMText(%d) = %q, want %q", limit, got, want)
		}
	}
}

// A session that ended because the job's container was OOMKilled (the
// error wraps the transport's *kube.ContainerEndedError) exits 137 and
// says so with the limit; another container end stays "outcome unknown".
func TestContainerOOMKilledExit(t *testing.T) {
	endedWith := func(code int32, reason string) error {
		e := &kube.ContainerEndedError{Namespace: "ci", Pod: "job", Container: kube.BuildContainer, ExitCode: code, Reason: reason, MemoryLimit: 64 << 20}
		// As the session wraps it: no result, the Connect error, the log's.
		return fmt.Errorf("%w: %w; %w", client.ErrNoResult, e, errors.New("the shim's log ends before the job's result"))
	}
	ended := func(reason string) error { return endedWith(137, reason) }
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	err := ended(kube.ReasonOOMKilled)
	if code := ExitCode(client.Result{}, err); code != 137 {
		t.Errorf("exit code %d; want 137", code)
	}
	Report(log, client.Result{}, err)
	if out := buf.String(); !strings.Contains(out, `killed="out of memory (limit 64Mi)"`) || !strings.Contains(out, "OOMKilled") || !strings.Contains(out, "exit_code=137") {
		t.Errorf("report: %s", out)
	}
	if code := ExitCode(client.Result{}, ended("Error")); code != ExitTether {
		t.Errorf("container ended with reason Error: exit code %d; want %d", code, ExitTether)
	}
	// A script OOM-killed earlier left the reason OOMKilled; the shim then
	// crashed (exit code 2): not an OOM kill of the container.
	buf.Reset()
	err = endedWith(2, kube.ReasonOOMKilled)
	if code := ExitCode(client.Result{}, err); code != ExitTether {
		t.Errorf("container ended with exit code 2, reason OOMKilled: exit code %d; want %d", code, ExitTether)
	}
	Report(log, client.Result{}, err)
	if out := buf.String(); strings.Contains(out, "its container was OOMKilled") || strings.Contains(out, "killed=") {
		t.Errorf("report of a container that a crash ended after an earlier OOM kill: %s", out)
	}
	if code := ExitCode(client.Result{ExitCode: 0}, nil); code != 0 {
		t.Errorf("a job that reported its result: exit code %d; want 0 whatever the container's reason", code)
	}
}
