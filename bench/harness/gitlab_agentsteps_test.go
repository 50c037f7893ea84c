package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The agent's step rows come from its "stage served" records of the
// stage, after the time given, with each step's own time.
func TestAgentStepRows(t *testing.T) {
	log := strings.Join([]string{
		`time=2026-11-28T00:23:09.300Z level=DEBUG msg="stage served" command=agent job=1 stage=step_script code=0 took=50ms settings=1ms ready=2ms job_sent=3ms first_bytes=9ms script_begin=9.5ms script_status=20ms exit_sent=21ms`,
		`time=2026-11-28T00:23:09.345Z level=DEBUG msg="stage served" command=agent job=1 stage=step_script code=0 took=10.38ms settings=100µs ready=300µs job_sent=500µs first_bytes=3ms script_begin=3.1ms script_status=9ms exit_sent=9.2ms`,
		`time=2026-11-28T00:23:09.350Z level=DEBUG msg="stage served" command=agent job=1 stage=get_sources code=0 took=99ms settings=9ms`,
		`time=2026-11-28T00:23:09.360Z level=INFO msg="pod deleted" command=cleanup job=1 pod="default/p q"`,
	}, "\n") + "\n"
	path := filepath.Join(t.TempDir(), "tether.log")
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	since, _ := time.Parse(time.RFC3339, "2026-11-28T00:23:09.310Z")
	rows, err := agentStepRows(path, "step_script", since)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(agentStepNames) {
		t.Fatalf("%d rows: %q", len(rows), rows)
	}
	for i, want := range []string{"median 0.100 ms", "median 0.300 ms", "median 0.500 ms", "median 3.0 ms", "median 3.1 ms", "median 9.0 ms", "median 9.2 ms"} {
		if !strings.Contains(rows[i][0], "(1 stages)") || !strings.HasPrefix(rows[i][1], want) {
			t.Errorf("row %d: %q, want %q from one stage", i, rows[i], want)
		}
	}
	if !strings.Contains(rows[5][1], "the step: 5.9 ms") {
		t.Errorf("the status step's own time: %q, want 5.9 ms", rows[5][1])
	}
	if _, err := agentStepRows(path, "step_script", since.Add(time.Hour)); err == nil {
		t.Error("no records after the time given, and no error")
	}
}

// An agent's cost is read from its threads' schedstat and its stat: this
// process's own grows as it works.
func TestAgentCost(t *testing.T) {
	cpu0, f0, err := agentCost(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	cpu1, f1, err := agentCost(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if cpu1 <= cpu0 || f1 <= f0 {
		t.Fatalf("CPU %s → %s, faults %d → %d: want both to grow", cpu0, cpu1, f0, f1)
	}
}
