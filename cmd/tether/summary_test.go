package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tether-ci/tether/internal/cmdutil"
)

// A real shim killed while its second script runs: tether run's summary
// lists that script as interrupted and only the third as skipped.
func TestRunSummaryNamesInterruptedScript(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "a.sh", "#!/bin/sh\necho a\n")
	writeScript(t, dir, "b.sh", "#!/bin/sh\nkill -KILL $PPID\nsleep 5\n")
	writeScript(t, dir, "c.sh", "#!/bin/sh\necho c\n")
	_, stderr, code := tether(t, dir, "run", "--local", "--log-format", "json", "a.sh", "b.sh", "c.sh")
	var summary map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(stderr)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stderr line %q: %v", line, err)
		}
		if m["msg"] == "job failed" {
			summary = m
		}
	}
	if code != cmdutil.ExitTether || summary == nil {
		t.Fatalf("exit %d, stderr:\n%s\nwant %d and a job failed summary", code, stderr, cmdutil.ExitTether)
	}
	list := func(key string) string { return fmt.Sprint(summary[key]) }
	if !strings.HasSuffix(list("interrupted"), "/b.sh]") || strings.Contains(list("interrupted"), "c.sh") {
		t.Errorf("summary interrupted=%s; want b.sh alone", list("interrupted"))
	}
	if strings.Contains(list("skipped"), "b.sh") || !strings.HasSuffix(list("skipped"), "/c.sh]") {
		t.Errorf("summary skipped=%s; want c.sh alone", list("skipped"))
	}
}
